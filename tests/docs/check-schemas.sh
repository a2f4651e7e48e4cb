#!/usr/bin/env bash
# The JSON Schemas in share/gpuops/schemas describe what the tools really write and read: every document
# vp-probe writes for the presets, clusters and fixtures validates, and so do the calibration fixtures and
# the catalogs vp-catalog builds for nodes and clusters.
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
print(f"{n1} topology, {n2} links and {n3} catalog documents checked, {b1 + b2 + b3} problems")
sys.exit(1 if b1 + b2 + b3 or n1 < 10 or n2 < 2 or n3 < 6 else 0)
PY
