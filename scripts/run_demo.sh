#!/usr/bin/env bash
# The main job: install what is missing, build, list the devices, run the
# C++ examples (eager MLP, PINN, static-mode train and deploy) on the
# default device ($OAR_DEVICE to choose another), then the Python main job: build and install the `oar` package
# into .venv (scripts/python_env.sh) and train the digits CNN
# (examples/python/digits_cnn.py: progress bar, test accuracy >= 0.95, save
# and reload, export of the inference program run again by oar-run), the
# 2-process data-parallel CNN, and the Fourier Neural Operator (science).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
oar_install_deps
oar_build
"$OAR_BUILD/bin/oar" devices
"$OAR_BUILD/bin/mlp_eager"
# Physics-informed network: -Δu = f on the unit square, the Laplacian by
# grad-of-grad; prints the relative L2 error against the exact solution.
"$OAR_BUILD/bin/pinn_poisson"
# Static mode: trace the model, append its backward and SGD updates, train
# with the executor, save (JSON + safetensors), reload with the Predictor;
# then run the saved file with oar-run, no Python involved.
"$OAR_BUILD/bin/static_train_deploy" --out "$OAR_BUILD/demo"
"$OAR_BUILD/bin/oar-run" "$OAR_BUILD/demo/spiral_mlp" --shape x=4,2
bash "$OAR_ROOT/scripts/python_env.sh"
OAR_VENV="${OAR_VENV:-$OAR_ROOT/.venv}"
# Run outside the source tree so `import oar` is the installed package.
cd "$OAR_ROOT/examples/python"
"$OAR_VENV/bin/python" digits_cnn.py --out "$OAR_BUILD/demo"
# The CNN's exported inference program, run by the C++ runner.
"$OAR_BUILD/bin/oar-run" "$OAR_BUILD/demo/digits_cnn_program" --shape image=4,1,8,8
# Data parallel: the same CNN on 2 processes started by the launcher
# (DistributedBatchSampler, oar.DataParallel over Gloo); the ranks must end
# with bit-identical parameters (docs/distributed.md).
"$OAR_VENV/bin/python" -m oar.distributed.launch --nproc_per_node 2 --log_dir "$OAR_BUILD/demo/dp_logs" digits_dp.py
# Science: a Fourier Neural Operator on 1-D Burgers data made by an oar.fft
# pseudo-spectral solver (complex weights, rfft/irfft), trained to a
# relative L2 test error < 5e-2, saved and reloaded, and its exported
# program (complex parameters, FFT ops) run by oar-run (docs/science.md).
"$OAR_VENV/bin/python" fno_burgers.py --out "$OAR_BUILD/demo" --oar-run "$OAR_BUILD/bin/oar-run"
# Semi-auto parallel: the seed article's demo (a [2, 4] weight split by
# columns over 2 ranks, dist.to_static, eval losses) under the launcher; each
# rank also recomputes the losses densely in one process, and the two lists
# must agree (docs/auto_parallel.md, "Static mode").
"$OAR_VENV/bin/python" -m oar.distributed.launch --devices "0,1" --log_dir "$OAR_BUILD/demo/seed_logs" seed_demo_dist.py
for log in "$OAR_BUILD"/demo/seed_logs/workerlog.{0,1}; do
  "$OAR_VENV/bin/python" -c 'import sys; l = open(sys.argv[1]).read().splitlines(); d = [float(v) for v in next(x for x in l if x.startswith("dense reference:")).split(":")[1].split()]; s = [float(v) for v in next(x for x in l if x.startswith("distributed:")).split(":")[1].split()]; assert len(d) == 4 and max(abs(a - b) for a, b in zip(d, s)) <= 1e-6, (sys.argv[1], d, s); print(sys.argv[1], "losses equal one process:", d)' "$log"
done
