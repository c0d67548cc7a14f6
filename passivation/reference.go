package passivation

// reference returns the `passivation` block of Akka/Pekko's reference.conf as a tree, the
// defaults that every configuration is merged over. Keep it identical to the seed
// (seeds/004, `akka.cluster.sharding.passivation`).
func reference() map[string]any {
	policyBlocks := func() map[string]any {
		return map[string]any{
			"least-recently-used": map[string]any{
				"segmented": map[string]any{"levels": "none", "proportions": []any{}},
			},
			"most-recently-used":    map[string]any{},
			"least-frequently-used": map[string]any{"dynamic-aging": "off"},
		}
	}
	replacement := policyBlocks()
	replacement["policy"] = "none"
	window := policyBlocks()
	window["proportion"] = 0.01
	window["minimum-proportion"] = 0.01
	window["maximum-proportion"] = 1.0
	window["optimizer"] = "off"
	window["hill-climbing"] = map[string]any{
		"adjust-multiplier": 10.0,
		"initial-step":      0.0625,
		"restart-threshold": 0.05,
		"step-decay":        0.98,
	}
	window["policy"] = "none"
	return map[string]any{
		"strategy": DefaultIdleStrategyName,
		DefaultIdleStrategyName: map[string]any{
			"idle-entity": map[string]any{"timeout": "120s"},
		},
		DefaultStrategyName: map[string]any{
			"active-entity-limit": 100000,
			"admission": map[string]any{
				"window": map[string]any{"policy": "least-recently-used", "optimizer": "hill-climbing"},
				"filter": "frequency-sketch",
			},
			"replacement": map[string]any{
				"policy": "least-recently-used",
				"least-recently-used": map[string]any{
					"segmented": map[string]any{"levels": 2, "proportions": []any{0.2, 0.8}},
				},
			},
		},
		"strategy-defaults": map[string]any{
			"idle-entity":         map[string]any{"timeout": "none", "interval": "default"},
			"active-entity-limit": "none",
			"replacement":         replacement,
			"admission": map[string]any{
				"window": window,
				"filter": "none",
				"frequency-sketch": map[string]any{
					"depth":            4,
					"counter-bits":     4,
					"width-multiplier": 4,
					"reset-multiplier": 10.0,
				},
			},
		},
	}
}
