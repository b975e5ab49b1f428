#!/usr/bin/env bash
# The main job: install what is missing, build, list the devices, and run the
# eager MLP example on the default device ($OAR_DEVICE to choose another).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
oar_install_deps
oar_build
"$OAR_BUILD/bin/oar" devices
"$OAR_BUILD/bin/mlp_eager"
