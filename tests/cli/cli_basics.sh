#!/usr/bin/env bash
# cli_basics.sh - every pony command level answers --help with exit 0,
# --version prints the version, and bad input is an error on stderr with a
# non-zero exit and nothing on stdout.
set -u
. "$PONY_SRCDIR/tests/lib.sh"

out=$("$PONY" --version) || fail "--version exited $?"
[[ $out =~ ^pony\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "--version printed '$out'"

"$PONY" --help | grep -q '^Commands:' || fail "--help lists no commands"

# Every command and subcommand the top-level help lists takes --help.
for cmd in $("$PONY" --help | awk '/^Commands:/{on=1; next} on && /^  /{print $1}'); do
	"$PONY" "$cmd" --help >/dev/null || fail "pony $cmd --help exited $?"
done

expect_usage_error "$PONY" no-such-command
expect_usage_error "$PONY"
pass
