package passivation

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// durationUnits are HOCON's duration units (case-sensitive, lowercase).
var durationUnits = map[string]time.Duration{
	"ns": time.Nanosecond, "nano": time.Nanosecond, "nanos": time.Nanosecond,
	"nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
	"us": time.Microsecond, "micro": time.Microsecond, "micros": time.Microsecond,
	"microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond,
	"millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

var errDuration = errors.New("not a duration")

// parseDuration reads a HOCON duration: a non-negative number, optional spaces and a unit
// ("120s", "100 ms", "1.5 minutes"). A bare number is refused rather than read as
// milliseconds, so that "timeout: 120" cannot silently mean 120 ms.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.') {
		end++
	}
	number, unit := s[:end], strings.TrimSpace(s[end:])
	scale, ok := durationUnits[unit]
	if number == "" || !ok {
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
