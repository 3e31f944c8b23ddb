#!/usr/bin/env bash
# Static checks beyond go vet, run by `make test`: gofmt, staticcheck and errcheck (with
# scripts/errcheck-excludes.txt).
# A tool that is not installed is installed with `go install` at a pinned version; where that fails (no
# network) the tool is skipped with one line. Exits non-zero when a tool reports findings.
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
bin=$("$GO" env GOBIN)
[ -n "$bin" ] || bin=$("$GO" env GOPATH)/bin
rc=0
if unformatted=$(gofmt -l .) && [ -n "$unformatted" ]; then
	echo "lint: gofmt would change:" $unformatted
	rc=1
fi
for tool in staticcheck=honnef.co/go/tools/cmd/staticcheck@v0.8.2 errcheck=github.com/kisielk/errcheck@v1.30.0; do
	name=${tool%%=*} pkg=${tool#*=}
	exe=$(command -v "$name" || echo "$bin/$name")
	if [ ! -x "$exe" ] && ! "$GO" install "$pkg" >/dev/null 2>&1; then
		echo "lint: $name is not installed and go install $pkg failed: skipped"
		continue
	fi
	case $name in
	staticcheck) "$exe" ./... || rc=1 ;;
	errcheck) "$exe" -ignoretests -exclude scripts/errcheck-excludes.txt ./... || rc=1 ;;
	esac
done
exit $rc
