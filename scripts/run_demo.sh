#!/usr/bin/env bash
# The main job: install what is missing, build, list the devices, run the
# eager MLP example and train the PINN on the default device ($OAR_DEVICE to
# choose another).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
oar_install_deps
oar_build
"$OAR_BUILD/bin/oar" devices
"$OAR_BUILD/bin/mlp_eager"
# Physics-informed network: -Δu = f on the unit square, the Laplacian by
# grad-of-grad; prints the relative L2 error against the exact solution.
"$OAR_BUILD/bin/pinn_poisson"
