// Package deepseek talks to DeepSeek for the deepseek_flash tool: a client of
// its OpenAI-compatible chat API, with the published prices every cost figure
// of the bridge uses.
package deepseek
