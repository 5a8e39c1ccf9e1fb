# Shared by the benchmark scripts (sourced, not run).

# Peak RSS comes from GNU time's -v; install it when missing.
ensure_gnu_time() {
  if [ ! -x /usr/bin/time ]; then
    echo "installing GNU time (for peak RSS)" >&2
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq time >/dev/null; else sudo apt-get install -y time; fi
  fi
}
