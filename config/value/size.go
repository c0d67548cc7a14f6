package value

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// sizeUnits are HOCON's memory-size units (reference.conf's notation): the single letters
// and the -bi forms are powers of 1024, the SI forms (kB, MB, …) powers of 1000.
var sizeUnits = map[string]int64{
	"": 1, "b": 1, "B": 1, "byte": 1, "bytes": 1,
	"k": 1 << 10, "K": 1 << 10, "Ki": 1 << 10, "KiB": 1 << 10, "kibibyte": 1 << 10, "kibibytes": 1 << 10,
	"m": 1 << 20, "M": 1 << 20, "Mi": 1 << 20, "MiB": 1 << 20, "mebibyte": 1 << 20, "mebibytes": 1 << 20,
	"g": 1 << 30, "G": 1 << 30, "Gi": 1 << 30, "GiB": 1 << 30, "gibibyte": 1 << 30, "gibibytes": 1 << 30,
	"t": 1 << 40, "T": 1 << 40, "Ti": 1 << 40, "TiB": 1 << 40, "tebibyte": 1 << 40, "tebibytes": 1 << 40,
	"kB": 1e3, "kilobyte": 1e3, "kilobytes": 1e3,
	"MB": 1e6, "megabyte": 1e6, "megabytes": 1e6,
	"GB": 1e9, "gigabyte": 1e9, "gigabytes": 1e9,
	"TB": 1e12, "terabyte": 1e12, "terabytes": 1e12,
}

var errSize = errors.New("not a size")

// ParseSize reads a HOCON memory size: a non-negative number, optional spaces and a unit
// ("256MiB", "64 M", "1.5 GiB", "500 kB"; a bare number is bytes).
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.') {
		end++
	}
	number, unit := s[:end], strings.TrimSpace(s[end:])
	scale, ok := sizeUnits[unit]
	if number == "" || !ok {
		return 0, errSize
	}
	if n, err := strconv.ParseInt(number, 10, 64); err == nil {
		if n > math.MaxInt64/scale {
			return 0, errSize
		}
		return n * scale, nil
	}
	f, err := strconv.ParseFloat(number, 64)
	if err != nil || f*float64(scale) >= math.MaxInt64 {
		return 0, errSize
	}
	return int64(math.Round(f * float64(scale))), nil
}

// Size reads a memory size in bytes at key: a string with a unit, or a number of bytes.
// "off", "none" and false read as 0. Allowed describes the range for the error message.
func Size(key string, v any, allowed string) (int64, error) {
	bad := &Error{Key: key, Value: v, Allowed: "a size such as 256MiB, 1GiB or 500MB (a bare number is bytes)" + suffix(allowed)}
	if IsOff(v) {
		return 0, nil
	}
	switch x := v.(type) {
	case string:
		n, err := ParseSize(x)
		if err != nil {
			return 0, bad
		}
		return n, nil
	case int64:
		if x < 0 {
			return 0, bad
		}
		return x, nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, bad
		}
		return int64(x), nil
	}
	if f, ok := ToFloat(v); ok && f >= 0 && f == math.Trunc(f) && f < math.MaxInt64 {
		return int64(f), nil
	}
	return 0, bad
}

// FormatSize renders a byte count for people, in the units ParseSize reads: "512 B",
// "3.2 MiB", "256 MiB".
func FormatSize(n uint64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatUint(n, 10) + " B"
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	s := strings.TrimSuffix(strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), "0"), ".")
	return s + " " + [...]string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}[i]
}
