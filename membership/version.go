package membership

import (
	"strconv"
	"strings"
)

// Version is a member's application version (Akka's app-version), compared numerically segment
// by segment: "1.10.0" > "1.9.3", "2" == "2.0.0"; a qualifier after '-' sorts before the plain
// version ("1.0.0-RC1" < "1.0.0") and qualifiers compare as strings. The empty version is the
// oldest of all.
type Version string

// Compare returns -1, 0 or +1 as v is older than, equal to or newer than o.
func (v Version) Compare(o Version) int {
	if v == o {
		return 0
	}
	vn, vq := splitVersion(string(v))
	on, oq := splitVersion(string(o))
	for i := 0; i < max(len(vn), len(on)); i++ {
		a, b := segment(vn, i), segment(on, i)
		if a != b {
			if a < b {
				return -1
			}
			return 1
		}
	}
	switch {
	case vq == oq:
		return 0
	case vq == "": // release beats its pre-release
		return 1
	case oq == "":
		return -1
	case vq < oq:
		return -1
	default:
		return 1
	}
}

func splitVersion(s string) (nums []string, qualifier string) {
	if i := strings.IndexByte(s, '-'); i >= 0 {
		s, qualifier = s[:i], s[i+1:]
	}
	if s == "" {
		return nil, qualifier
	}
	return strings.Split(s, "."), qualifier
}

func segment(nums []string, i int) int64 {
	if i >= len(nums) {
		return 0
	}
	n, err := strconv.ParseInt(nums[i], 10, 64)
	if err != nil {
		return -1 // a non-numeric segment sorts before any number
	}
	return n
}
