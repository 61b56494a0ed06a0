#!/usr/bin/env bash
# Compiles README.md's C quick start (the first ```c block: its #include
# lines, then the statements, wrapped in a main) against build/include with
# -Wall -Wextra -Werror, so the snippet users copy cannot rot.
# Usage: readme_snippet.sh README.md OUTDIR CC
set -euo pipefail
readme=$1 out=$2 cc=${3:-cc}
mkdir -p "$out"
awk '/^```c$/ && !done {f=1; next} /^```$/ && f {f=0; done=1} f' "$readme" > "$out/readme_snippet.body"
[[ -s "$out/readme_snippet.body" ]] || { echo "readme_snippet: no \`\`\`c block in $readme" >&2; exit 1; }
{
  echo '#include <poll.h>'
  grep '^#include' "$out/readme_snippet.body"
  echo 'int main(void) {'
  grep -v '^#include' "$out/readme_snippet.body"
  echo 'return 0;'
  echo '}'
} > "$out/readme_snippet.c"
"$cc" -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -Wno-unused-but-set-variable -Ibuild/include \
  -c "$out/readme_snippet.c" -o "$out/readme_snippet.o"
echo "readme_snippet: README.md's C quick start compiles ($(wc -l < "$out/readme_snippet.body") lines)"
