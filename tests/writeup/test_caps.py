"""Reading what a server build offers from its --help (models and flags), so that the sweep
skips, rather than fails, what a build does not have yet."""
from study import procs

HELP = """exchange-server: the order-matching exchange (XML over TCP):
  -h [ --help ]                        show this help and exit
  --port arg (=12345)                  TCP port to listen on
  --concurrency arg (=pool)            concurrency model:
                                         reactor: one event-loop thread
                                       multiplexes every connection and runs
                                       requests inline
                                         per-client: a thread per connection
                                       for its whole life (blocking reads)
                                         pool: half-sync/half-async: one
                                       event-loop thread frames requests,
                                       --threads workers run them
                                         adaptive: sized by Little's law
                                       on measured concurrency: fast
  --threads arg (=4)                   worker threads of the fixed pool
  --metrics arg                        write one CSV row per second
"""


def test_models_are_the_indented_entries_only():
    caps = procs.parse_server_help(HELP)
    # "--threads workers run them" is wrapped text, not the next flag; "on measured
    # concurrency: fast" is wrapped text, not a model.
    assert caps.models == ["reactor", "per-client", "pool", "adaptive"]


def test_flags():
    caps = procs.parse_server_help(HELP)
    assert caps.has("metrics") and caps.has("--threads") and caps.has("concurrency")
    assert not caps.has("simulated-io-ms-per-child")


def test_old_build_without_models_section():
    caps = procs.parse_server_help("  --port arg (=12345)   TCP port\n")
    assert caps.models == []
