"""Before/after of bench_ops from two builds, interleaved, as one table.

    git worktree add --detach /tmp/before <rev>
    cmake -S /tmp/before -B /tmp/before/build -G Ninja -DCMAKE_BUILD_TYPE=Release
    cmake --build /tmp/before/build --target bench_ops oar_cpu
    python3 bench/ab_builds.py /tmp/before/build build 3

Rounds alternate the order (before, after / after, before) so load falls on
both alike; each cell is the median of the rounds' medians.
"""
import subprocess, json, statistics, sys, os
builds={"before":sys.argv[1],"after":sys.argv[2]}
env=dict(os.environ, OMP_NUM_THREADS="2", OAR_NUM_THREADS="2", OAR_DEVICE="cpu")
res={}
rounds=int(sys.argv[3]) if len(sys.argv)>3 else 3
for r in range(rounds):
    for name,b in (builds.items() if r%2==0 else reversed(list(builds.items()))):
        out=subprocess.run([b+"/bin/bench_ops","--reps","15","--warmup","3"],capture_output=True,text=True,env=env).stdout
        for line in out.splitlines():
            if line.startswith("{"):
                d=json.loads(line); res.setdefault((d["op"],d["shape"]),{}).setdefault(name,[]).append(d["median_ms"])
print(f"{'op':22} {'shape':24} {'before':>10} {'after':>10} {'after/before':>12}")
for (op,shape),v in res.items():
    a=statistics.median(v["before"]); b=statistics.median(v["after"])
    unit="us" if op.endswith("_us") else "ms"
    print(f"{op:22} {shape:24} {a:10.3f} {b:10.3f} {b/a:12.2f}")
