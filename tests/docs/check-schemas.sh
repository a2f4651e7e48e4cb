#!/usr/bin/env bash
# The JSON Schemas in share/gpuops/schemas describe what the tools really write and read: every document
# vp-probe writes for the presets, clusters and fixtures validates, and so do the calibration fixtures, the
# catalogs vp-catalog builds for nodes and clusters, the plans vp-plan makes (VarioPath and the baselines, fast's
# relayed hops included, on generated and CSV demands), the demand documents they embed, and a flow model file
# vp-plan reads.
set -u
bin=$1 src=$2
# Debian's interpreter first: python3-jsonschema installs there, whatever else is on PATH.
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
[ -n "$py" ] && "$py" -c 'import jsonschema' 2>/dev/null || { echo "skipped: python3-jsonschema not installed"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
emit() { n=$((n + 1)); "$bin/vp-probe" -q "$@" > "$work/topology-$n.json" || { echo "vp-probe $* failed"; exit 1; }; }
for preset in $("$bin/vp-probe" --list-presets | awk '{print $1}'); do emit --preset "$preset"; done
emit --preset pcie-8gpu-gen4 --nodes 3 --fabric rail:200Gb/s
emit --preset pcie-4gpu-direct --hosts 'gpu[01-02]' --fabric nonblocking
emit --preset pcie-8gpu-gen4 --links "$src/tests/fixtures/links/calibrated.json"
for f in "$src"/tests/fixtures/hwloc/switch-2pkg.xml "$src"/tests/fixtures/hwloc/flat-v1.xml "$src"/tests/fixtures/hwloc/snc-2numa.xml; do emit --xml "$f"; done
for f in "$src"/tests/fixtures/nccl/p4d-like.xml "$src"/tests/fixtures/nccl/classless.xml; do emit --nccl-xml "$f"; done
emit  # this machine, live
m=0
# catalog "VP-CATALOG OPTIONS" VP-PROBE OPTIONS...: the catalog of what vp-probe writes.
catalog() {
  m=$((m + 1)); local opts=$1; shift
  # shellcheck disable=SC2086
  "$bin/vp-probe" -q "$@" | "$bin/vp-catalog" -q $opts > "$work/catalog-$m.json" || { echo "vp-catalog $opts for $* failed"; exit 1; }
}
catalog "" --preset pcie-4gpu-direct
catalog "" --preset pcie-8gpu-gen4
catalog "" --preset pcie-8gpu-gen4 --nodes 3 --fabric rail:200Gb/s
catalog "" --preset pcie-8gpu-gen4 --nodes 32 --fabric rail  # raw_channels and compression overflow: null
catalog "--method hierarchical" --preset pcie-8gpu-gen4  # sockets joined by their interconnect
catalog "--expand" --preset pcie-4gpu-direct
moe=moe:experts=64,topk=8,tokens=4096,hidden=7168,dtype=bf16,zipf=1.2
# A flow model file (when its schema exists): vp-plan must accept it, and the plans below use it once.
model=
if [ -f "$src/share/gpuops/schemas/gpuops.model.v1.json" ]; then
  model=$work/model-1.json
  cat > "$model" <<'JSON'
{"schema": "gpuops.model", "schema_version": 1, "generator": {"tool": "check-schemas", "version": "0"},
 "alpha_us": 6.5, "eta": [1, 0.81, 0.7, 0.62], "latency_scale": 1.5,
 "sources": {"alpha_us": "a test value", "eta": "a test value"}}
JSON
fi
"$bin/vp-probe" -q --preset pcie-8gpu-gen4 > "$work/plan-topology-8.json"
"$bin/vp-probe" -q --preset pcie-4gpu-direct --nodes 2 --fabric rail:200Gb/s > "$work/plan-topology-2x4.json"
printf '%s\n' '# a measured matrix' gpu0,gpu1,gpu2,gpu3,gpu4,gpu5,gpu6,gpu7 \
  0,1,2,3,4,5,6,7 1,0,0,0,0,0,0,0 65536,0,0,65536,0,0,0,1048576 0,0,0,0,0,0,0,0 \
  7,6,5,4,3,2,1,0 0,4096,0,4096,0,4096,0,0 1,1,1,1,1,1,1,1 0,0,0,0,0,0,9,0 > "$work/demand-8.csv"
p=0
# plan "VP-PLAN OPTIONS": a plan, read back by vp-plan --check against the same topology.
plan() {
  p=$((p + 1)); local opts=$1 where
  where=$(printf '%s\n' "$opts" | grep -oE -- '--(catalog|topology) [^ ]+')
  # shellcheck disable=SC2086
  "$bin/vp-plan" -q $opts > "$work/plan-$p.json" || { echo "vp-plan $opts failed"; exit 1; }
  # shellcheck disable=SC2086
  "$bin/vp-plan" -q $where --check "$work/plan-$p.json" > /dev/null || { echo "vp-plan $where --check of vp-plan $opts failed"; exit 1; }
}
plan "--catalog $work/catalog-1.json --demand $moe"                           # pcie-4gpu-direct, variopath
plan "--catalog $work/catalog-1.json --demand uniform:bytes=0"                # nothing to send: no steps
plan "--catalog $work/catalog-2.json --demand $moe"                           # pcie-8gpu-gen4, variopath
plan "--catalog $work/catalog-2.json --demand $work/demand-8.csv"             # a CSV demand: no spec
for algo in direct pairwise bvn fast; do
  plan "--topology $work/plan-topology-8.json --algo $algo --demand zipf:s=1.2,bytes=64MiB,seed=7"
  plan "--topology $work/plan-topology-2x4.json --algo $algo --demand hot:experts=2,fraction=0.5,bytes=4MiB"
done
[ -n "$model" ] && plan "--catalog $work/catalog-1.json --model $model --demand uniform:bytes=1MiB"
# The demands the plans embed, as documents of their own; one is planned again from its file.
"$py" - "$work" <<'PY'
import glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "plan-[0-9]*.json"))):
    n = os.path.basename(f)[len("plan-"):-len(".json")]
    json.dump(json.load(open(f))["demand"], open(os.path.join(sys.argv[1], f"demand-{n}.json"), "w"))
PY
"$bin/vp-plan" -q --catalog "$work/catalog-2.json" --algo direct --demand "$work/demand-3.json" > /dev/null \
  || { echo "vp-plan could not read back the demand of a plan"; exit 1; }
"$py" - "$src/share/gpuops/schemas" "$work" "$src/tests/fixtures/links" <<'PY'
import glob, json, os, sys
import jsonschema
schemas, work, links = sys.argv[1:4]
def check(schema_file, files):
    schema = json.load(open(os.path.join(schemas, schema_file)))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    bad = 0
    for f in files:
        for e in validator.iter_errors(json.load(open(f))):
            print(f"{os.path.basename(f)}: /{'/'.join(map(str, e.absolute_path))}: {e.message}")
            bad += 1
    return bad, len(files)
b1, n1 = check("gpuops.topology.v1.json", sorted(glob.glob(os.path.join(work, "topology-*.json"))))
b2, n2 = check("gpuops.links.v1.json", sorted(glob.glob(os.path.join(links, "*.json"))))
catalogs = sorted(glob.glob(os.path.join(work, "catalog-*.json")))
b3, n3 = check("gpuops.catalog.v1.json", catalogs)
# The optional branches of the schema were exercised: a null count, a port pattern, expanded instances.
docs = [json.load(open(f)) for f in catalogs]
seen = {"null raw_channels": any(d["stats"]["raw_channels"] is None for d in docs),
        "a port pattern": any(d["pattern"] is not None for d in docs),
        "instances": any("instances" in ch for d in docs for c in d["classes"] for ch in c["channels"])}
for what, ok in seen.items():
    if not ok:
        print(f"no catalog had {what}")
        b3 += 1
plans = sorted(glob.glob(os.path.join(work, "plan-[0-9]*.json")))
b4, n4 = check("gpuops.plan.v1.json", plans)
b5, n5 = check("gpuops.demand.v1.json", sorted(glob.glob(os.path.join(work, "demand-[0-9]*.json"))))
# The plan schema repeats the demand schema so that it stands alone: the two must agree.
plan_schema = json.load(open(os.path.join(schemas, "gpuops.plan.v1.json")))
demand_schema = json.load(open(os.path.join(schemas, "gpuops.demand.v1.json")))
for key in ("type", "required", "properties"):
    if plan_schema["$defs"]["demand"].get(key) != demand_schema.get(key):
        print(f"gpuops.plan.v1.json: $defs/demand/{key} differs from gpuops.demand.v1.json")
        b5 += 1
docs = [json.load(open(f)) for f in plans]
seen = {"an exclusive plan": any(d["exclusive"] for d in docs),
        "a shared plan": any(not d["exclusive"] for d in docs),
        "a plan without steps": any(not d["steps"] for d in docs),
        "a demand without spec": any("spec" not in d["demand"] for d in docs),
        "a path through via devices": any(t["via"] for d in docs for s in d["steps"] for t in s["transfers"]),
        "a relayed hop (origin)": any("origin" in t for d in docs for s in d["steps"] for t in s["transfers"]),
        "a path across nodes": any("/" in t["src"] and t["src"].split("/")[0] != t["dst"].split("/")[0]
                                   for d in docs for s in d["steps"] for t in s["transfers"])}
for what, ok in seen.items():
    if not ok:
        print(f"no plan had {what}")
        b4 += 1
b6 = n6 = 0
if os.path.exists(os.path.join(schemas, "gpuops.model.v1.json")):
    b6, n6 = check("gpuops.model.v1.json", sorted(glob.glob(os.path.join(work, "model-*.json"))))
    b6 += 0 if n6 >= 1 else 1
bad = b1 + b2 + b3 + b4 + b5 + b6
print(f"{n1} topology, {n2} links, {n3} catalog, {n4} plan, {n5} demand and {n6} model documents checked, "
      f"{bad} problems")
sys.exit(1 if bad or n1 < 10 or n2 < 2 or n3 < 6 or n4 < 10 or n5 != n4 else 0)
PY
[ $? = 0 ] || exit 1
# sif-score: the cluster states it reads (the fixtures, the shipped example) and writes (--format state, from Slurm
# output), and its gpuops.sif reports (closed form, search, mixed node sizes, node usage, inexact lower bound).
if [ -f "$src/share/gpuops/schemas/gpuops.cluster-state.v1.json" ]; then
  s=0
  sif() { s=$((s + 1)); "$bin/sif-score" -q "$@" > "$work/sif-$s.json" || { echo "sif-score $* failed"; exit 1; }; }
  fx=$src/tests/fixtures
  for f in "$fx"/placement/paper-*.json "$fx"/placement/two-avoidable.json "$fx"/placement/mixed-sizes.json \
           "$src"/share/gpuops/examples/*.json; do
    cp "$f" "$work/state-$(basename "$f")"
    sif "$f"
  done
  sif --sinfo "$fx/slurm/sinfo-3node.json" --squeue "$fx/slurm/squeue-3node.json"
  sif --scontrol-nodes "$fx/slurm/scontrol-nodes-3node.txt"
  # Mixed sizes need the search; one state is not enough for it, so phi_star is a lower bound.
  cat > "$work/budget.json" <<'JSON'
{"schema": "gpuops.cluster-state", "schema_version": 1,
 "nodes": [{"name": "a", "gpus": 8}, {"name": "b", "gpus": 8}, {"name": "c", "gpus": 4}],
 "instances": [{"job": "1", "node": "a", "gpus": 5}, {"job": "2", "node": "b", "gpus": 3},
               {"job": "3", "node": "b", "gpus": 3}, {"job": "4", "node": "c", "gpus": 2}]}
JSON
  sif --max-states 1 "$work/budget.json"
  "$bin/sif-score" -q --sinfo "$fx/slurm/sinfo-3node.json" --format state > "$work/state-from-sinfo.json" || exit 1
  "$bin/sif-score" -q --scontrol-nodes "$fx/slurm/scontrol-nodes-3node.txt" --squeue "$fx/slurm/squeue-3node.json" \
    --format state > "$work/state-from-scontrol.json" || exit 1
  "$py" - "$src/share/gpuops/schemas" "$work" <<'PY' || exit 1
import glob, json, os, sys
import jsonschema
schemas, work = sys.argv[1:3]
bad = 0
counts = {}
for schema_file, pattern in (("gpuops.cluster-state.v1.json", "state-*.json"), ("gpuops.sif.v1.json", "sif-*.json")):
    schema = json.load(open(os.path.join(schemas, schema_file)))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    files = sorted(glob.glob(os.path.join(work, pattern)))
    counts[schema_file] = len(files)
    for f in files:
        for e in validator.iter_errors(json.load(open(f))):
            print(f"{os.path.basename(f)}: /{'/'.join(map(str, e.absolute_path))}: {e.message}")
            bad += 1
docs = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(work, "sif-*.json")))]
seen = {"a closed form": any(d["phi_star_method"] == "closed-form" for d in docs),
        "a search": any(d["phi_star_method"] == "search" for d in docs),
        "a lower bound": any(not d["phi_star_exact"] for d in docs),
        "mixed node sizes (null G and WCC)": any(d["gpus_per_node"] is None and d["wcc"] is None for d in docs),
        "node usage": any(d["instances_from"] == "node-usage" for d in docs)}
for what, ok in seen.items():
    if not ok:
        print(f"no sif report had {what}")
        bad += 1
print(f"{counts['gpuops.cluster-state.v1.json']} cluster-state and {counts['gpuops.sif.v1.json']} sif documents "
      f"checked, {bad} problems")
sys.exit(1 if bad or counts["gpuops.cluster-state.v1.json"] < 6 or counts["gpuops.sif.v1.json"] < 8 else 0)
PY
fi
# compass-place: the gpuops.job documents it reads, and its gpuops.placement decisions under every policy (placed,
# waiting, with migrations, relaxed, pinned instances read from the shipped example).
if [ -f "$src/share/gpuops/schemas/gpuops.placement.v1.json" ]; then
  c=0
  fx=$src/tests/fixtures/placement
  ex=$src/share/gpuops/examples/cluster-state-small.json
  place() {
    c=$((c + 1)); "$bin/compass-place" -q "$@" > "$work/placement-$c.json"
    local rc=$?
    [ $rc = 0 ] || [ $rc = 1 ] || { echo "compass-place $* failed ($rc)"; exit 1; }
  }
  for p in compass first-fit best-fit spread random fgd repack; do
    place --state "$ex" --job "$fx/job-2x4.json" --policy "$p"
    place --state "$fx/abs-gap.json" --instances 2 --gpus 3 --policy "$p"
  done
  place --state "$fx/strict-wait.json" --instances 1 --gpus 1
  place --state "$fx/strict-wait.json" --instances 1 --gpus 1 --relaxed
  place --state "$fx/paper-tightness.json" --instances 3 --gpus 4
  cp "$fx/job-2x4.json" "$work/job-1.json"
  "$py" - "$src/share/gpuops/schemas" "$work" <<'PY' || exit 1
import glob, json, os, sys
import jsonschema
schemas, work = sys.argv[1:3]
bad = 0
counts = {}
for schema_file, pattern in (("gpuops.job.v1.json", "job-*.json"), ("gpuops.placement.v1.json", "placement-*.json")):
    schema = json.load(open(os.path.join(schemas, schema_file)))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    files = sorted(glob.glob(os.path.join(work, pattern)))
    counts[schema_file] = len(files)
    for f in files:
        for e in validator.iter_errors(json.load(open(f))):
            print(f"{os.path.basename(f)}: /{'/'.join(map(str, e.absolute_path))}: {e.message}")
            bad += 1
docs = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(work, "placement-*.json")))]
seen = {"every policy": {d["policy"] for d in docs} == {"compass", "first-fit", "best-fit", "spread", "random",
                                                        "fgd", "repack"},
        "a wait": any(d["wait"] for d in docs),
        "a migration": any(d["migrations"] for d in docs),
        "relaxed compass": any(d["relaxed"] for d in docs),
        "pinned instances": any(d["abs_before"] and d["abs_before"]["pinned_instances"] > 0 for d in docs)}
for what, ok in seen.items():
    if not ok:
        print(f"no placement decision had {what}")
        bad += 1
print(f"{counts['gpuops.job.v1.json']} job and {counts['gpuops.placement.v1.json']} placement documents checked, "
      f"{bad} problems")
sys.exit(1 if bad or counts["gpuops.job.v1.json"] < 1 or counts["gpuops.placement.v1.json"] < 17 else 0)
PY
fi
# compass-place simulate: gpuops.simulation reports from every trace fixture the importers take, sized both ways,
# every policy, with and without busy periods (null AFR/AGU).
if [ -f "$src/share/gpuops/schemas/gpuops.simulation.v1.json" ]; then
  m=0
  tx=$src/tests/fixtures/traces
  sim() {
    m=$((m + 1)); "$bin/compass-place" simulate -q "$@" > "$work/simulation-$m.json" || { echo "simulate $* failed"; exit 1; }
  }
  sim --trace "$tx/sim-small.csv"
  sim --trace "$tx/sim-small.csv" --nodes 2 --backfill --migration-charge per-instance --policy compass,repack
  sim --trace "$tx/openb.csv" --round-up-fractional --nodes 2 --window-day 0
  sim --trace "$tx/tiresias.csv" --max-jobs 3 --eta 0.5
  sim --trace "$tx/bad-negative-duration.csv" --lenient --nodes 1
  "$py" - "$src/share/gpuops/schemas/gpuops.simulation.v1.json" "$work" <<'PY' || exit 1
import glob, json, os, sys
import jsonschema
schema_path, work = sys.argv[1:3]
schema = json.load(open(schema_path))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
files = sorted(glob.glob(os.path.join(work, "simulation-*.json")))
bad = 0
for f in files:
    for e in validator.iter_errors(json.load(open(f))):
        print(f"{os.path.basename(f)}: /{'/'.join(map(str, e.absolute_path))}: {e.message}")
        bad += 1
results = [r for f in files for r in json.load(open(f))["results"]]
seen = {"every policy": {r["policy"] for r in results} >= {"compass", "first-fit", "best-fit", "spread", "random",
                                                            "fgd", "repack"},
        "a null AFR": any(r["afr"] is None for r in results),
        "a migration": any(r["migrations"] > 0 for r in results)}
for what, ok in seen.items():
    if not ok:
        print(f"no simulation result had {what}")
        bad += 1
print(f"{len(files)} simulation documents checked, {bad} problems")
sys.exit(1 if bad or len(files) < 5 else 0)
PY
fi
