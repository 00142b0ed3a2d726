#!/usr/bin/env bash
# What a user of the published package gets (`make package-check`, run by `make test`):
#   1. `python -m build`: the sdist, then the wheel built from that sdist, into a temp dir;
#   2. every file of the source tree's package (modules, the demo corpus, the vocabularies,
#      the web page's assets, py.typed) is in the wheel;
#   3. the wheel installed with its dependencies (the base install: no extra, no dev tool)
#      into a fresh venv, and `memoir demo` run from it with a temp HOME and MEMOIR_HOME and
#      nothing else of this environment, outside the checkout; its output checked;
#   4. the base install's time and size reported (the provider SDKs are extras).
# Usage: scripts/package-check.sh [PYTHON]   (PYTHON: the one that has `build`; .venv's)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=${1:-$root/.venv/bin/python}
work=$(mktemp -d "${TMPDIR:-/tmp}/memoir-package-check-XXXXXXXX")
trap '[ -n "${PACKAGE_CHECK_KEEP:-}" ] || rm -rf "$work"' EXIT
start=$(date +%s)

fail() { echo "package-check: $*" >&2; exit 1; }

"$python" -m build --outdir "$work/dist" "$root" >"$work/build.log" 2>&1 \
  || { cat "$work/build.log" >&2; fail "python -m build failed"; }
built=$(date +%s)
wheel=$(ls "$work"/dist/*.whl)
sdist=$(ls "$work"/dist/*.tar.gz)

"$python" - "$root/src/memoir" "$wheel" "$sdist" <<'EOF' || fail "the wheel lacks files"
import sys, tarfile, zipfile
from pathlib import Path

src, wheel, sdist = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
names = set(zipfile.ZipFile(wheel).namelist())
wanted = {
    "memoir/" + p.relative_to(src).as_posix()
    for p in src.rglob("*")
    if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
}
missing = sorted(wanted - names)
for name in missing[:20]:
    print(f"  not in the wheel: {name}", file=sys.stderr)
dist = next(n for n in names if n.endswith(".dist-info/METADATA")).split("-")[0]
print(f"  {Path(wheel).name}: {len(wanted)} package files, distribution {dist}")
with tarfile.open(sdist) as tar:
    print(f"  {Path(sdist).name}: {len(tar.getnames())} entries")
sys.exit(1 if missing else 0)
EOF

# a venv with nothing in it (no pip, no setuptools), filled by this pip (`--python`, pip 22.3+);
# no bytecode compiled ahead: a third of the time, and `memoir demo` compiles what it imports
"$python" -m venv --without-pip "$work/venv"
"$python" -m pip --python "$work/venv/bin/python" install -q --no-compile "$wheel" \
  >"$work/pip.log" 2>&1 || { cat "$work/pip.log" >&2; fail "installing the wheel failed"; }
installed=$(date +%s)

mkdir -p "$work/home" "$work/run"
out="$work/demo.txt"
(cd "$work/run" && env -i PATH=/usr/bin:/bin LANG=C.UTF-8 HOME="$work/home" \
  MEMOIR_HOME="$work/home/.memoir" TMPDIR="$work" COLUMNS=120 \
  "$work/venv/bin/memoir" demo --home "$work/demo-home") >"$out" 2>&1 \
  || { cat "$out" >&2; fail "memoir demo failed"; }

expect() { grep -qE "$1" "$out" || { cat "$out" >&2; fail "memoir demo did not print: $1"; }; }
expect "^synced [1-9][0-9]* transcripts"
expect "summary pass \(offline model\): [1-9][0-9]* conversations summarized, 0 failed"
expect "'flaky coupon timezone' → [1-9] hit"
expect "compaction.* → .* tokens"
expect "memoir remember.* → [1-9][0-9]* item"
[ -f "$work/demo-home/memoir.db" ] || fail "memoir demo left no database in --home"
[ ! -e "$work/home/.memoir" ] || fail "memoir demo wrote into MEMOIR_HOME"
size=$(du -sm "$work/venv" | cut -f1)
echo "package-check: ok in $(($(date +%s) - start)) s (build $((built - start)) s," \
  "fresh venv + install $((installed - built)) s, demo $(($(date +%s) - installed)) s);" \
  "the base install is ${size} MB (no extra: no provider SDK)"
