#!/bin/sh
echo "coverage is not supported in Overseer's offline build" >&2
exit 1
