#!/usr/bin/env bash
# Run `make` stages in order and print each one's wall time at the end (into _build/stage-times.txt too).
#
#     scripts/stages.sh lint unit book+seed-run@1 standard pdf+browser site-check
#
# A word a+b is a group: its stages run at the same time, their output kept in _build/logs/<stage>.log and printed
# when the group is done; stage@N runs that stage with JOBS=N (seed-run@1: one notebook at a time, beside the book's
# build). A failed stage stops the run after its group, except seed-run (the records test of the standard stage
# reports its failures claim by claim).
set -u
mkdir -p _build/logs
times=_build/stage-times.txt
rm -f "$times"
status=0
begin=$(date +%s)
for group in "$@"; do
  words=(${group//+/ })
  stages=()
  for word in "${words[@]}"; do
    stage=${word%@*}
    stages+=("$stage")
    jobs=(); [[ $word == *@* ]] && jobs=("JOBS=${word#*@}")
    rm -f "_build/logs/$stage.rc"
    if ((${#words[@]} == 1)); then
      start=$(date +%s); make --no-print-directory "$stage" "${jobs[@]}"
      echo "$? $(( $(date +%s) - start ))" > "_build/logs/$stage.rc"
    else
      ( start=$(date +%s); make --no-print-directory "$stage" "${jobs[@]}" > "_build/logs/$stage.log" 2>&1
        echo "$? $(( $(date +%s) - start ))" > "_build/logs/$stage.rc" ) &
    fi
  done
  wait
  group=$(IFS=+; echo "${stages[*]}")
  for stage in "${stages[@]}"; do
    if ((${#stages[@]} > 1)); then
      echo "== $stage (ran beside ${group//+/, })"; cat "_build/logs/$stage.log"
    fi
    read -r rc secs < "_build/logs/$stage.rc"
    echo "$stage: $secs s$( ((${#stages[@]} > 1)) && echo " (in parallel: $group)")$( [ "$rc" = 0 ] || echo ' (failed)')" >> "$times"
    if [ "$rc" != 0 ] && [ "$stage" != seed-run ]; then status=$rc; fi
  done
  if [ "$status" != 0 ]; then break; fi
done
echo "total: $(( $(date +%s) - begin )) s" >> "$times"
echo "== wall time of each stage"; cat "$times"
exit "$status"
