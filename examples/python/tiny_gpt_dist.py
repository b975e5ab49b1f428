"""The tiny GPT (frontends/python/tests/tiny_gpt.py: 2 layers, 4 heads,
width 128, vocab 256) trained with one semi-auto parallel strategy, its loss
curve printed next to the single-process one.

    python examples/python/tiny_gpt_dist.py --strategy tp --steps 50

runs itself under `python -m oar.distributed.launch` with the ranks the
strategy needs (2; 4 for dp_tp). Strategies: dp (batch Shard(0)), tp
(Megatron column/row by placements), sp (tp + sequence parallel around
layer_norm/dropout), stage1/stage2/stage3 (sharded optimizer state /
+ gradients / + parameters over 2 data-parallel ranks), dp_tp (a 2x2 mesh);
--sharding stage1..3 adds a sharded optimizer to dp or dp_tp.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "frontends", "python", "tests"))

import tiny_gpt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strategy", choices=tiny_gpt.STRATEGIES, default="tp")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--sharding", choices=("stage1", "stage2", "stage3"), default=None,
                    help="also shard the optimizer along the dp mesh dim (dp or dp_tp)")
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--sdpa", action="store_true", help="attention through scaled_dot_product_attention")
    ap.add_argument("--static", action="store_true", help="through dist.to_static (one program per rank)")
    args = ap.parse_args()
    if args.sharding and args.strategy not in ("dp", "dp_tp"):
        ap.error(f"--sharding needs a dp mesh dim (--strategy dp or dp_tp), not {args.strategy}")
    world = tiny_gpt.world_of(args.strategy)
    if "WORLD_SIZE" not in os.environ and "PADDLE_TRAINERS_NUM" not in os.environ:
        cmd = [sys.executable, "-m", "oar.distributed.launch", "--nproc_per_node", str(world),
               os.path.abspath(__file__)] + sys.argv[1:]
        sys.exit(subprocess.call(cmd, env=dict(os.environ, OAR_NUM_THREADS=os.environ.get("OAR_NUM_THREADS", "1"))))

    import oar.distributed as dist
    dist.init_parallel_env()
    cfg = tiny_gpt.GPTConfig(dropout=args.dropout, sdpa=args.sdpa)
    curve = tiny_gpt.strategy_curve(args.strategy, args.steps, cfg, args.batch, sharding=args.sharding,
                                    static=args.static)
    if dist.get_rank() != 0:
        return
    dense = tiny_gpt.single_process_curve(args.steps, cfg, args.batch)
    name = args.strategy + (f" + {args.sharding}" if args.sharding else "") + (" static" if args.static else "")
    print(f"tiny GPT, {args.steps} AdamW steps, strategy {name} on {world} ranks vs one process")
    print(f"{'step':>4}  {'one process':>12}  {name:>14}  {'|diff|':>9}")
    worst = 0.0
    for i, (a, b) in enumerate(zip(dense, curve)):
        worst = max(worst, abs(a - b))
        print(f"{i:>4}  {a:12.6f}  {b:14.6f}  {abs(a - b):9.2e}")
    print(f"largest difference {worst:.2e} (loss {dense[0]:.4f} -> {dense[-1]:.4f})")


if __name__ == "__main__":
    main()
