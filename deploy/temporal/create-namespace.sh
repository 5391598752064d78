#!/bin/sh
# Registers the namespace ampflow uses and the custom search attributes its
# task workflow upserts. Safe to run on every start: the server treats adding
# an attribute that exists as done.
#
#   TEMPORAL_ADDRESS    frontend host:port
#   TEMPORAL_NAMESPACE  namespace to create if missing
#   SEARCH_ATTRIBUTES   space-separated Name=Type pairs, e.g. AmpRisk=Keyword
set -eu

: "${TEMPORAL_ADDRESS:?}" "${TEMPORAL_NAMESPACE:?}" "${SEARCH_ATTRIBUTES:?}"
addr=$TEMPORAL_ADDRESS
ns=$TEMPORAL_NAMESPACE

# retry runs its arguments until they succeed, for up to two minutes: the
# frontend can answer before it is ready, and before its namespace cache has
# seen a namespace just created.
retry() {
	n=0
	until "$@"; do
		n=$((n + 1))
		if [ "$n" -ge 60 ]; then
			echo "giving up: $*" >&2
			return 1
		fi
		sleep 2
	done
}

retry temporal operator cluster health --address "$addr"

if temporal operator namespace describe --address "$addr" -n "$ns" >/dev/null 2>&1; then
	echo "namespace $ns exists"
else
	retry temporal operator namespace create --address "$addr" -n "$ns"
	echo "namespace $ns created"
fi

for pair in $SEARCH_ATTRIBUTES; do
	name=${pair%%=*}
	type=${pair#*=}
	retry temporal operator search-attribute create --address "$addr" -n "$ns" --name "$name" --type "$type"
	echo "search attribute $name ($type) ready"
done
temporal operator search-attribute list --address "$addr" -n "$ns"
