# kill-midway.sh DIR COMMAND...: runs COMMAND, sends it SIGTERM as soon as a
# temporary file appears in DIR, and succeeds only if it was killed midway
# (not finished) -- for the "a killed compile leaves nothing" test.
dir=$1
shift
"$@" &
pid=$!
i=0
while [ $i -lt 3000 ]; do
  if ls "$dir" | grep -q '\.tmp$'; then
    kill -TERM $pid
    wait $pid
    exit $(( $? == 0 ))
  fi
  if ! kill -0 $pid 2>/dev/null; then
    echo "the command finished before it could be killed" >&2
    exit 1
  fi
  sleep 0.01
  i=$((i + 1))
done
kill -KILL $pid
echo "no temporary file appeared in $dir" >&2
exit 1
