#!/usr/bin/env bash
# Rebuilds fixtures/macho: the iOS Mach-O files the tests link (src/test-support/toolchain.ts),
# made once with clang and ld64.lld (Debian: apt-get install clang lld llvm) and committed, so the
# tests need neither. Run it from anywhere after changing a test's source or build options; it
# runs every test that builds a binary with MACHO_FIXTURES=record and writes the tools' versions
# to fixtures/macho/TOOLS.txt.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
out="$root/fixtures/macho"
first() { for t in "$@"; do command -v "$t" >/dev/null && { echo "$t"; return; }; done; echo "none of $* is installed" >&2; exit 1; }
clang="$(first clang)"
ld="$(first ld64.lld-14 ld64.lld)"
lipo="$(first llvm-lipo-14 llvm-lipo)"

rm -rf "$out"
mkdir -p "$out"
cd "$root/packages/ipa"
MACHO_FIXTURES=record npx vitest run
cd "$root/apps/server"
MACHO_FIXTURES=record npx vitest run src/modules/sign/sign.test.ts src/modules/sign/lost-leases.test.ts \
  src/modules/sign/worker-process.test.ts

{
  echo "Made by packages/ipa/scripts/build-macho-fixtures.sh on $(date -u +%F) with:"
  echo "  $("$clang" --version | head -1)"
  echo "  $("$ld" --version | head -1)"
  echo "  $lipo: $("$lipo" -version | grep -m1 'LLVM version' | sed 's/^ *//')"
  echo "$(find "$out" -name '*.gz' | wc -l) files, $(du -sk "$out" | cut -f1) KiB."
} > "$out/TOOLS.txt"
cat "$out/TOOLS.txt"

# Every file listed in fixtures/PROVENANCE.md (apps/server/src/repository.test.ts checks it).
node -e '
const fs = require("fs");
const [file, dir] = process.argv.slice(1);
const rows = fs.readdirSync(dir).sort().map((f) => `| \`macho/${f}\` | ${fs.statSync(dir + "/" + f).size} bytes |`);
const text = fs.readFileSync(file, "utf8").replace(
  /<!-- macho:begin -->[\s\S]*<!-- macho:end -->/,
  ["<!-- macho:begin -->", "| file | size |", "| --- | --- |", ...rows, "<!-- macho:end -->"].join("\n"),
);
fs.writeFileSync(file, text);
' "$root/fixtures/PROVENANCE.md" "$out"
