#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each: parse (parse -> apply -> render),
# framing (FrameReader) and session (the connection state machine under random socket events).
#
#   tests/fuzz/build_and_run.sh [RUNS]     RUNS executions per target (default 10000000)
#
# ./test.sh runs a short version through CTest (fuzz_short). Crashes are written to
# .local/fuzz/; turn each into a regression test and add the input to tests/fuzz/corpus/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
runs=${1:-10000000}
out=.local/fuzz
mkdir -p "$out"

clangxx=$(command -v clang++ || command -v clang++-14 || true)
probe='extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }'
if [[ -z "$clangxx" ]] || ! echo "$probe" | "$clangxx" -x c++ -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
  echo "SKIPPED: clang++ with libFuzzer is not installed (apt-get install clang libclang-rt-14-dev)"
  exit 77
fi

flags=(-std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -Iserver -Icommon -Itests)
core=(server/market/decimal.cpp server/market/order_book.cpp server/market/engine.cpp
      server/market/engine_steps.cpp server/market/matching.cpp
      server/protocol/parse.cpp server/protocol/reject_text.cpp server/protocol/render.cpp
      server/app/apply.cpp server/gates/admission.cpp common/wire/xml_escape.cpp)
"$clangxx" "${flags[@]}" tests/fuzz/fuzz_parse.cpp "${core[@]}" -lpugixml -o "$out/fuzz_parse"
"$clangxx" "${flags[@]}" tests/fuzz/fuzz_framing.cpp server/net/framing.cpp \
  server/protocol/render.cpp server/protocol/reject_text.cpp server/market/decimal.cpp \
  common/wire/xml_escape.cpp -o "$out/fuzz_framing"
# The session with authentication: the gate, the principals file, keys (OpenSSL's libcrypto),
# the throttle and the log its refusals go to.
"$clangxx" "${flags[@]}" tests/fuzz/fuzz_session.cpp server/net/session.cpp \
  server/net/buffer_budget.cpp server/net/framing.cpp server/protocol/render.cpp \
  server/protocol/reject_text.cpp server/market/decimal.cpp common/wire/xml_escape.cpp \
  server/auth/gate.cpp server/auth/principals.cpp server/auth/key.cpp \
  server/auth/logon_throttle.cpp server/auth/address_group.cpp server/util/log.cpp -lcrypto \
  -o "$out/fuzz_session"

for target in parse framing session; do
  echo "== fuzz_$target: $runs runs"
  # A scratch copy of the corpus grows during the run; the committed corpus stays small.
  work="$out/corpus-$target"
  mkdir -p "$work"
  cp -n tests/fuzz/corpus/$target/* "$work"/ 2>/dev/null || true
  "$out/fuzz_$target" -runs="$runs" -max_len=4096 -artifact_prefix="$out/crash-$target-" \
    -print_final_stats=1 "$work" 2>&1 | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)" || true
  # libFuzzer exits non-zero on a crash; the pipeline above hides it, so check for artifacts.
  if compgen -G "$out/crash-$target-*" >/dev/null; then
    echo "fuzz_$target found a crash: $(ls "$out"/crash-$target-*)"
    exit 1
  fi
done
echo "fuzzing: no crash"
