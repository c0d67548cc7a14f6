// Package value reads configuration values as YAML and TOML decoders deliver them (strings,
// integers of several widths, floats, booleans, lists), in the notation of Akka's
// reference.conf: HOCON durations ("120s", "100 ms", "2 minutes"), on/off booleans, and
// "none"/"off" for a disabled setting. Every error names the key, the value and what is
// allowed.
package value

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Error is a bad configuration value: Key is the full dotted path
// ("cluster.failure-detector.threshold"), Value the offending value as written, Allowed what
// the key accepts.
type Error struct {
	Key     string
	Value   any
	Allowed string
	Source  string // where the value came from: a file name, "flag --set", "environment SHARDMESH_…"; may be empty
}

func (e *Error) Error() string {
	src := ""
	if e.Source != "" {
		src = " (" + e.Source + ")"
	}
	return fmt.Sprintf("%s = %s%s: %s", e.Key, Format(e.Value), src, e.Allowed)
}

// Format renders a raw value as a user wrote it: strings quoted, lists in brackets.
func Format(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(x)
	case time.Duration:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []float64:
		parts := make([]string, len(x))
		for i, f := range x {
			parts[i] = strconv.FormatFloat(f, 'g', -1, 64)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = Format(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		return "{…}"
	default:
		return fmt.Sprint(x)
	}
}

// IsOff reports whether v disables a setting: "none", "off", false or null.
func IsOff(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		s := strings.ToLower(strings.TrimSpace(x))
		return s == "none" || s == "off"
	}
	return false
}

var durationUnits = map[string]time.Duration{
	"ns": time.Nanosecond, "nano": time.Nanosecond, "nanos": time.Nanosecond,
	"nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
	"us": time.Microsecond, "µs": time.Microsecond, "micro": time.Microsecond, "micros": time.Microsecond,
	"microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond,
	"millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

var errDuration = errors.New("not a duration")

// ParseDuration reads a HOCON duration: a non-negative number, optional spaces and a unit
// ("120s", "100 ms", "1.5 minutes"). Go's compound form ("1m30s") is accepted too. A bare
// number is refused rather than read as milliseconds, so "timeout: 120" cannot silently mean
// 120 ms.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.') {
		end++
	}
	number, unit := s[:end], strings.TrimSpace(s[end:])
	scale, ok := durationUnits[unit]
	if number == "" || !ok {
		if d, err := time.ParseDuration(s); err == nil && d >= 0 && strings.ContainsAny(s, "hms") {
			return d, nil
		}
		return 0, errDuration
	}
	if n, err := strconv.ParseInt(number, 10, 64); err == nil {
		if n > math.MaxInt64/int64(scale) {
			return 0, errDuration
		}
		return time.Duration(n) * scale, nil
	}
	f, err := strconv.ParseFloat(number, 64)
	if err != nil || f*float64(scale) >= math.MaxInt64 {
		return 0, errDuration
	}
	return time.Duration(math.Round(f * float64(scale))), nil
}

// Duration reads a duration at key. Allowed describes the range for the error message.
func Duration(key string, v any, allowed string) (time.Duration, error) {
	s, ok := v.(string)
	if !ok {
		return 0, &Error{Key: key, Value: v, Allowed: "a duration with a unit such as 500ms, 10s or 2 minutes" + suffix(allowed)}
	}
	d, err := ParseDuration(s)
	if err != nil {
		return 0, &Error{Key: key, Value: v, Allowed: "a duration with a unit such as 500ms, 10s or 2 minutes" + suffix(allowed)}
	}
	return d, nil
}

// Int reads an integer in [lo, hi] at key. A string holding an integer is accepted (flags and
// environment variables are strings).
func Int(key string, v any, lo, hi int) (int, error) {
	n, ok := ToInt(v)
	if !ok || n < lo || n > hi {
		return 0, &Error{Key: key, Value: v, Allowed: rangeText("an integer", lo, hi)}
	}
	return n, nil
}

// Float reads a number in [lo, hi] at key.
func Float(key string, v any, lo, hi float64) (float64, error) {
	f, ok := ToFloat(v)
	if !ok || math.IsNaN(f) || f < lo || f > hi {
		return 0, &Error{Key: key, Value: v, Allowed: fmt.Sprintf("a number from %g to %g", lo, hi)}
	}
	return f, nil
}

// Bool reads on/off, true/false, yes/no at key.
func Bool(key string, v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "on", "true", "yes":
			return true, nil
		case "off", "false", "no":
			return false, nil
		}
	}
	return false, &Error{Key: key, Value: v, Allowed: "on or off (also true/false, yes/no)"}
}

// String reads a string at key.
func String(key string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", &Error{Key: key, Value: v, Allowed: "a string"}
	}
	return s, nil
}

// Enum reads one of the allowed words at key.
func Enum(key string, v any, allowed ...string) (string, error) {
	s, ok := v.(string)
	if ok {
		for _, a := range allowed {
			if strings.EqualFold(strings.TrimSpace(s), a) {
				return a, nil
			}
		}
	}
	return "", &Error{Key: key, Value: v, Allowed: "one of " + strings.Join(allowed, ", ")}
}

// Strings reads a list of strings at key. A single string is split on commas (the form flags
// and environment variables use).
func Strings(key string, v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		var out []string
		for _, f := range strings.Split(x, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
		return out, nil
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, &Error{Key: key, Value: v, Allowed: "a list of strings"}
			}
			out = append(out, s)
		}
		return out, nil
	case []string:
		return x, nil
	}
	return nil, &Error{Key: key, Value: v, Allowed: "a list of strings"}
}

// ToInt converts what decoders deliver for an integer (any integer kind within the int32
// range, an integral float, a string of digits).
func ToInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int8:
		return int(x), true
	case int16:
		return int(x), true
	case int32:
		return int(x), true
	case int64:
		if x < math.MinInt32 || x > math.MaxInt32 {
			return 0, false
		}
		return int(x), true
	case uint8:
		return int(x), true
	case uint16:
		return int(x), true
	case uint32:
		if x > math.MaxInt32 {
			return 0, false
		}
		return int(x), true
	case uint64:
		if x > math.MaxInt32 {
			return 0, false
		}
		return int(x), true
	case uint:
		if x > math.MaxInt32 {
			return 0, false
		}
		return int(x), true
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > math.MaxInt32 {
			return 0, false
		}
		return int(x), true
	case float32:
		return ToInt(float64(x))
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		return n, err == nil
	}
	return 0, false
}

// ToFloat converts what decoders deliver for a number (finite).
func ToFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case float32:
		return ToFloat(float64(x))
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	if n, ok := ToInt(v); ok {
		return float64(n), true
	}
	return 0, false
}

func rangeText(what string, lo, hi int) string {
	switch {
	case lo == math.MinInt && hi == math.MaxInt:
		return what
	case hi == math.MaxInt:
		return fmt.Sprintf("%s of at least %d", what, lo)
	default:
		return fmt.Sprintf("%s from %d to %d", what, lo, hi)
	}
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return ", " + s
}
