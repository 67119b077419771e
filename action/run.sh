#!/usr/bin/env bash
# The shell of the sage-tod composite action (action.yml): install, evaluate,
# report, gate. Reads its inputs from INPUT_* variables and the runner's
# RUNNER_TEMP, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY (and GITHUB_SERVER_URL,
# GITHUB_REPOSITORY, GITHUB_RUN_ID for the link to the run's artifacts).
# Exit status: that of `sage-tod gate` (0 pass, 1 gate failed, 2 bad input),
# or 0 on a failed gate when INPUT_FAIL_ON_GATE is 'false'.
set -euo pipefail

die() { echo "::error title=sage-tod::$1" >&2; exit 2; }

: "${INPUT_SPEC:?INPUT_SPEC (the spec input) is required}"
: "${INPUT_TURNS:?INPUT_TURNS (the turns input) is required}"
[ -f "$INPUT_SPEC" ] || die "spec not found: $INPUT_SPEC"
[ -f "$INPUT_TURNS" ] || die "turns not found: $INPUT_TURNS"
if [ -n "${INPUT_BASELINE:-}" ] && [ ! -f "$INPUT_BASELINE" ]; then
  die "baseline not found: $INPUT_BASELINE"
fi

tmp="${RUNNER_TEMP:-${TMPDIR:-/tmp}}"
dir="${INPUT_OUTPUT_DIR:-$tmp/sage-tod}"
mkdir -p "$dir"
verdicts="$dir/verdicts.jsonl"
report="$dir/report.html"
summary="$dir/summary.md"
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  { echo "dir=$dir"; echo "verdicts=$verdicts"; echo "report=$report"; echo "summary=$summary"; } \
    >> "$GITHUB_OUTPUT"
fi

install="${INPUT_INSTALL:-}"
if [ "$install" != "none" ]; then
  if [ -z "$install" ]; then
    : "${SAGE_TOD_ACTION_PATH:?SAGE_TOD_ACTION_PATH (the action checkout) is not set}"
    extras="${INPUT_EXTRAS:-}"
    install="$SAGE_TOD_ACTION_PATH${extras:+[$extras]}"
  fi
  echo "::group::install sage-tod ($install)"
  python3 -m pip install --quiet "$install"
  echo "::endgroup::"
fi
command -v sage-tod >/dev/null || die "sage-tod is not on PATH"

sage-tod evaluate --spec "$INPUT_SPEC" --turns "$INPUT_TURNS" --out "$verdicts" \
  --config "${INPUT_CONFIG:-core}" --overwrite --quiet
sage-tod report "$verdicts" --turns "$INPUT_TURNS" --spec "$INPUT_SPEC" --out "$report" --overwrite \
  --title "sage-tod: $(basename "$INPUT_TURNS")"

args=("$verdicts" --turns "$INPUT_TURNS" --summary "$summary" --overwrite --worst "${INPUT_WORST:-5}")
[ -n "${INPUT_BASELINE:-}" ] && args+=(--baseline "$INPUT_BASELINE")
[ -n "${INPUT_MAX_FAILURE_RATE:-}" ] && args+=(--max-failure-rate "$INPUT_MAX_FAILURE_RATE")
[ -n "${INPUT_MAX_UNDECIDED_RATE:-}" ] && args+=(--max-undecided-rate "$INPUT_MAX_UNDECIDED_RATE")
[ -n "${INPUT_MAX_CONVERSATION_FAILURE_RATE:-}" ] && args+=(--max-conversation-failure-rate "$INPUT_MAX_CONVERSATION_FAILURE_RATE")
[ -n "${INPUT_MIN_F1:-}" ] && args+=(--min-f1 "$INPUT_MIN_F1")
[ -n "${INPUT_MAX_REGRESSIONS:-}" ] && args+=(--max-regressions "$INPUT_MAX_REGRESSIONS")
for limit in ${INPUT_MAX_CLASS:-}; do args+=(--max-class "$limit"); done
if [ -n "${GITHUB_RUN_ID:-}" ] && [ -n "${GITHUB_REPOSITORY:-}" ]; then
  args+=(--report-link "${GITHUB_SERVER_URL:-https://github.com}/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID#artifacts")
else
  args+=(--report-link "$report")
fi

set +e
sage-tod gate "${args[@]}"
rc=$?
set -e
if [ "$rc" -eq 1 ] && [ "${INPUT_FAIL_ON_GATE:-true}" = "false" ]; then
  echo "::warning title=sage-tod::gate failed (fail-on-gate is false; job continues)"
  exit 0
fi
exit "$rc"
