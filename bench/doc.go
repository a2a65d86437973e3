// Package bench measures what the bridge itself costs, side by side with the
// floor, for `make bench`: it starts the DeepSeek double and a real
// `bridge serve`, drives them on loopback with a load driver that speaks MCP
// over Streamable HTTP as a host does (initialize once per client, then
// tools/call, answers read from SSE), and reports one table.
//
// What one Run measures, against the double with zero delay:
//
//   - deepseek_flash latency p50/p99 at 1, 8 and 64 concurrent clients,
//     through the bridge and straight against the double with the same
//     upstream request (the floor), and the difference;
//   - the CPU per call of the bridge process beside that of a minimal Go
//     proxy doing the same job (MinimalProxy, bench/minproxy: no MCP library,
//     no checks, no logging), their ratio, and calls/s of both, measured
//     in the same run, and their ratio;
//   - tools/call throughput at saturation (rate limit raised for the run);
//   - RSS of bridge serve idle, under load and after, and its goroutine
//     count before, during and after a load run (read from the loopback-only
//     debug endpoint that BRIDGE_DEBUG_ADDR turns on, see server.ServeDebug);
//   - deepseek_agent_poll latency on a finished job, and the time from
//     deepseek_agent_start to the harness running, with a stand-in harness
//     (bench/standin) so that only the bridge's part is counted, beside a bare
//     exec of the same stand-in, and that start broken down by stage from
//     the bridge's own log lines (admission, the job record, the token, the
//     walks, the harness files, the spawn);
//   - 1,000 concurrent long-polls held on a running job, and the memory each
//     costs; then the job is cancelled and every poll must answer.
//
// Targets are reported (pass / MISS), never asserted. Every phase is bounded
// in requests and time; child processes are owned and stopped.
package bench
