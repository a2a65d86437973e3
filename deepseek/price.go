package deepseek

import (
	"math"
	"strings"
)

// Price is USD per one million tokens.
type Price struct {
	CacheHitInput  float64 `json:"cache_hit_input"`
	CacheMissInput float64 `json:"cache_miss_input"`
	Output         float64 `json:"output"`
}

// Published prices (USD per 1M tokens) as of the DeepSeek pricing page the
// project last checked; see REFERENCE.md.
var (
	FlashPrice = Price{CacheHitInput: 0.0028, CacheMissInput: 0.14, Output: 0.28}
	ProPrice   = Price{CacheHitInput: 0.003625, CacheMissInput: 0.435, Output: 0.87}
)

// PriceFor returns the price of a model id. Unknown ids are priced as pro, so a
// ceiling errs on the side of the owner's bill.
func PriceFor(model string) Price {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "pro"), strings.Contains(m, "reasoner"):
		return ProPrice
	case strings.Contains(m, "flash"), m == "deepseek-chat":
		return FlashPrice
	default:
		return ProPrice
	}
}

// Cost prices token counts: cache-hit input, cache-miss input and output
// (reasoning tokens are output tokens and are already inside output).
func (p Price) Cost(cacheHit, cacheMiss, output int64) float64 {
	return RoundUSD((float64(cacheHit)*p.CacheHitInput + float64(cacheMiss)*p.CacheMissInput + float64(output)*p.Output) / 1e6)
}

// RoundUSD rounds an amount to 1e-12 USD. Every published price per token
// has at most 12 decimals, so this loses nothing, and it drops the float
// noise a sum picks up (0.0067688600000000015 is 0.00676886 again).
func RoundUSD(usd float64) float64 {
	return math.Round(usd*1e12) / 1e12
}
