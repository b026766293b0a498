#!/bin/sh
# docker-entrypoint.sh of the official Node images (github.com/nodejs/docker-node,
# MIT): run the command with node when the first argument is an option or not a
# command; otherwise exec it as given, so the command becomes PID 1.
set -e

# The last test inside {} works around a dash bug (https://bugs.debian.org/874264).
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi

exec "$@"
