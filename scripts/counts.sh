# Counting for the shell test scripts (sourced after setting `suite`):
#   check WHAT CMD...   the command's success is the check's
#   ok WHAT / bad WHAT  a check that passed / failed
#   skip WHY            a check whose precondition is missing
#   finish              prints "<suite> tests: P passed, F failed, S skipped"
#                       (the script's last line) and succeeds if none failed
# A skip prints "SKIPPED: WHY" and is counted. In strict mode it counts as a
# failure instead: strict when RETRY_TEST_STRICT=1, or when CI is set and
# RETRY_TEST_STRICT is not 0.

passed=0
failed=0
skipped=0
strict=""
if [ "${RETRY_TEST_STRICT:-}" = 1 ] || { [ -n "${CI:-}" ] && [ "${RETRY_TEST_STRICT:-}" != 0 ]; }; then
  strict=1
fi

ok() {
  passed=$((passed + 1))
  echo "ok: $1"
}
bad() {
  failed=$((failed + 1))
  echo "FAILED: $1" >&2
}
skip() {
  if [ -n "$strict" ]; then
    bad "$1 (a missing precondition fails in strict mode: CI or RETRY_TEST_STRICT=1)"
  else
    skipped=$((skipped + 1))
    echo "SKIPPED: $1"
  fi
}
check() {
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
finish() {
  echo "$suite tests: $passed passed, $failed failed, $skipped skipped"
  [ "$failed" = 0 ]
}
