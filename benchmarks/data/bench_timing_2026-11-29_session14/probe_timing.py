"""Time the ragged project's op and cuDNN through xlacc bench's harness with its timing constants
patched: does the per-sample overhead explain the gap to bench_ragged.py?"""
import json, os, statistics, sys, time
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
from xlacc.commands.bench import harness, timing

variant, project, records = sys.argv[1], sys.argv[2], sys.argv[3]
extra = sys.argv[4:]
settings = {"default": {}, "long": {"SAMPLE_SECONDS": 50e-3}, "longchain": {"SAMPLE_SECONDS": 50e-3, "CHAIN_SECONDS": 10e-3}}[variant]
for k, v in settings.items():
    setattr(timing, k, v)
start = time.time()
rc = harness.main(["--project", project, "--records", records, "--shapes", "64x2048,8x8192,1x4096x4096",
                   "--peer", "xlacc.commands.bench.attention_peers:cudnn_ragged", "--rounds", "2", "--samples", "3", *extra])
print(f"variant {variant} rc {rc} in {time.time() - start:.0f} s")
for line in open(records):
    r = json.loads(line)
    if r.get("key") == "bench_limits":
        v = r["value"]; print(f"  copy {v['copy_bytes_per_s']/1e9:.0f} GB/s, chain {v['copy_chain']}, dispatch {v['dispatch_s']*1e6:.1f} us")
    if r.get("key") == "bench_case":
        v = r["value"]
        for c in v["contenders"]:
            s = sorted(c["samples"])
            print(f"  {v['label']:<36} {c['name']:<12} chain {v['chain']:>2} reps {c['reps']:>3} median {statistics.median(s)*1e6:9.1f} us  min {s[0]*1e6:9.1f}  queued {statistics.median(c['queued']):.2f}")
