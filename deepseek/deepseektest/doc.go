// Package deepseektest is an in-process double of the DeepSeek API (OpenAI
// and Anthropic formats) for tests and demos.
package deepseektest
