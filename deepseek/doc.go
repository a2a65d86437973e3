// Package deepseek is the client of DeepSeek's OpenAI-compatible chat API used by
// the deepseek_flash tool, plus the published prices every cost figure uses.
package deepseek
