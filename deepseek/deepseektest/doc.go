// Package deepseektest is a scriptable double of the DeepSeek API — the
// OpenAI-format chat completions endpoint and the Anthropic-format messages
// endpoint — for tests, the demo and benchmarks on machines with no route to
// DeepSeek. It reproduces the documented shapes and errors (REFERENCE.md).
//
// # Serving
//
// New starts a double on a fresh 127.0.0.1 port (one per test; doubles share
// nothing); NewServer serves on a listener the caller made. URL() is the base:
//
//	POST URL()/chat/completions                          OpenAI side (no /v1, as DeepSeek)
//	POST URL()/anthropic/v1/messages[?beta=true]         Anthropic side, streamed or JSON
//	POST URL()/anthropic/v1/messages/count_tokens        {"input_tokens": N}
//	GET  URL()/models                                    the accepted model ids (a key check)
//	GET  URL()/user/balance                              is_available and the balance (WithBalance)
//
// Anything else is 404. Close abandons delayed answers, closes connections
// and returns once every handler has.
//
// # What it enforces (as the real API does)
//
//   - The key: OpenAI side `Authorization: Bearer KEY`; Anthropic side
//     `x-api-key: KEY` or `Authorization: Bearer KEY`. Otherwise 401 with
//     DeepSeek's body, e.g. {"error":{"message":"Authentication Fails, Your api
//     key: ****abcd is invalid","type":"authentication_error","param":null,
//     "code":"invalid_request_error"}} (DeepSeek's Anthropic endpoint answers
//     errors in this same shape; Claude Code prints it as is).
//   - Model ids: DefaultModels plus WithModels; others get 400 "Model Not
//     Exist". The Anthropic side also accepts any claude* name, as DeepSeek
//     maps those (opus to v4-pro, the rest to flash).
//   - The missing-reasoning_content 400 (MissingReasoningBody): an assistant
//     message whose tool_calls include an id this double served together with
//     reasoning, sent back without its reasoning_content.
//   - A JSON body with a non-empty messages list (400 otherwise).
//
// Checks run before a turn is taken, so a rejected request never consumes
// one.
//
// # Scripting
//
// Script appends Turns to the OpenAI queue, ScriptAnthropic to the Anthropic
// queue; each request that passes the checks takes the next turn of its
// side. A Turn is a text (Text), reasoning plus text (Reasoned), tool calls
// (ToolCalls with Call; OpenAI content is null, Anthropic gets tool_use
// blocks), reasoning only with blank content and finish_reason "length"
// (ReasoningOnly; Anthropic stop_reason "max_tokens"), an error status with
// the documented body (Error, RateLimited with Retry-After), a dropped
// connection (Reset), or a Func that builds the turn from the recorded
// request (e.g. read r.ToolResultTexts() and answer with it reversed).
// With… methods add usage numbers (reported exactly, so cost tests can sum
// them), a delay before the answer, a delay between chunks, keep-alives
// before any data (": keep-alive" comments on the OpenAI side, blank lines
// when not streamed, ping events on the Anthropic side) and a Break: bytes
// that are not JSON after the first chunk (BreakMalformed) or a connection
// closed in the middle of the body (BreakCut). Reasoning becomes
// reasoning_content deltas before content deltas on the OpenAI side, and a
// thinking block (thinking_delta then a signature_delta) before the text
// and tool_use blocks on the Anthropic side. Without a scripted Usage the
// double estimates one from sizes (4 bytes a token).
//
// An empty queue answers the default turn (DefaultText, or WithDefault).
//
// # Anthropic side requests
//
// Rule: an Anthropic messages request WITHOUT tools is a side request and is
// answered from the side turn (SideText, or WithSideTurn); it never consumes
// a scripted turn. count_tokens never does either. Only requests that offer
// tools — Claude Code's agent loop always does — take scripted turns.
// WithSideRule replaces the rule. Request.SideRequest and Request.Scripted
// record which way each request went.
//
// What Claude Code 2.1.328 sends (measured by TestClaudeCodeDrivesAnthropicSide,
// `claude -p --output-format stream-json --verbose --input-format stream-json
// --allowedTools Bash` with ANTHROPIC_BASE_URL=URL()/anthropic,
// ANTHROPIC_AUTH_TOKEN, ANTHROPIC_MODEL and ANTHROPIC_SMALL_FAST_MODEL set to
// deepseek-flash, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, HOME and
// CLAUDE_CONFIG_DIR in a temp dir):
//
//   - Exactly one POST /anthropic/v1/messages?beta=true per model turn, with
//     `Authorization: Bearer KEY` (no x-api-key), stream true, max_tokens
//     32000, about 48 KB of JSON with 12 tools, top-level keys model,
//     messages, system (3 text blocks, cache_control on two), tools,
//     metadata.user_id, thinking {"type":"adaptive"}, context_management,
//     output_config {"effort":"high"}. Headers include anthropic-version
//     2023-06-01, an anthropic-beta list, User-Agent "claude-cli/2.1.328
//     (external, sdk-cli)", X-Claude-Code-Session-Id and X-Stainless-Timeout
//     600.
//   - messages carries a "system"-role message (environment) besides the
//     user turns; the user's task comes after a <system-reminder> text block.
//   - The second request sends back the assistant turn exactly as streamed —
//     thinking block with its signature, then tool_use — followed by a user
//     message holding the tool_result (string content "hello-from-bash").
//   - No side requests at all in -p mode: no count_tokens, no quota probe, no
//     title generation, with or without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC
//     and ANTHROPIC_SMALL_FAST_MODEL (checked by hand as well). The rule above
//     is a guard for other modes and versions.
//   - Timing on this shared machine: the init line came 1.9–4.1 s after
//     spawn in test runs (a quiet hand run finished entirely in 0.9 s), the
//     result 0.6–1.5 s after init for two model turns and one Bash call;
//     with stream-json input the process exits only after stdin is closed
//     (it did so 30–60 ms later).
//   - stderr gets "[claude-code:unrecognized_model] {"model":"deepseek-flash",…}"
//     for the non-Claude model name; it is harmless.
//
// How 2.1.328 reacts to the double's failure turns (measured by hand with
// cmd/deepseek-double, same flags; not pinned by a test):
//
//   - 402: no retry; the result line is {"subtype":"success","is_error":true,
//     "result":"API Error: 402 Insufficient Balance","terminal_reason":
//     "api_error"} and the exit status is 1. Check is_error, not subtype.
//   - 401, 429 (Retry-After 1 honoured: next request 1.2 s later), 500, 503,
//     BreakCut and BreakMalformed are all retried by Claude Code itself with
//     the same body (X-Stainless-Retry-Count stays 0). A persistent 500 was
//     retried at +0.7, 1.1, 2.1, 4.8, 9.5, 17.9, 35, 36 s … — a job facing a
//     dead upstream hangs for minutes unless something above it has a
//     deadline.
//   - ReasoningOnly (stop_reason max_tokens, thinking only) makes Claude Code
//     send the same turn again at once with max_tokens raised from 32000 to
//     128000.
//
// # Recording
//
// Requests and AnthropicRequests return copies of every request (rejected
// ones too): method, path, raw query, headers, raw body, parsed JSON, arrival
// time, and whether it was scripted or a side request, with helpers (Model,
// Stream, HasTools, MaxTokens, Messages, System, LastUserText,
// ToolResultTexts). WithRequestLog writes one JSON line per request with the
// key headers redacted. Everything is safe for concurrent use.
//
// # Script files (cmd/deepseek-double --script)
//
// A JSON list of ScriptTurn, served in order per side:
//
//	[{"side":"openai","text":"hello","reasoning":"…","usage":{"input_tokens":120,"cache_hit_tokens":64,"output_tokens":40,"reasoning_tokens":10}},
//	 {"side":"anthropic","tool_calls":[{"name":"Bash","arguments":{"command":"echo hi"}}]},
//	 {"side":"both","status":429,"retry_after":2},
//	 {"text":"slow","delay_ms":500,"chunk_delay_ms":20,"keep_alives":3},
//	 {"text":"broken","break":"cut"}]
//
// side is openai (default), anthropic or both; break is malformed, cut or
// reset; status must be 400–599; "unstreamed":true answers a stream: true
// request (OpenAI side) with one application/json body, as some
// OpenAI-compatible gateways do.
package deepseektest
