#!/usr/bin/env bash
# Static checks beyond go vet, run by `make test`: gofmt, staticcheck and errcheck (with
# scripts/errcheck-excludes.txt). Both tools are pinned by go.mod's tool directives and run with `go tool`,
# which builds each once into Go's build cache: nothing is installed. Where a tool cannot be built (no network
# and no module cache) it is skipped with one line. Exits non-zero when a check reports findings.
set -u
usage() { sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"; }
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
	usage
	exit 0
fi
if [[ $# -ne 0 ]]; then
	usage >&2
	exit 2
fi
cd "$(dirname "$0")/.."
GO=${GO:-go}
rc=0
if unformatted=$(gofmt -l .) && [ -n "$unformatted" ]; then
	echo "lint: gofmt would change:" $unformatted
	rc=1
fi
for tool in staticcheck errcheck; do
	if ! err=$("$GO" tool -n "$tool" 2>&1 >/dev/null); then
		echo "lint: $tool (go.mod's tool directive) cannot be built: skipped: ${err%%$'\n'*}"
		continue
	fi
	case $tool in
	staticcheck) "$GO" tool staticcheck ./... || rc=1 ;;
	errcheck) "$GO" tool errcheck -ignoretests -exclude scripts/errcheck-excludes.txt ./... || rc=1 ;;
	esac
done
exit $rc
