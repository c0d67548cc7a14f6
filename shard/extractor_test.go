package shard

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
)

// TestExtractorsMatchJava checks the extractors against values printed by Java itself
// (testdata/JavaHashCodes.java): String.hashCode, Akka's HashCodeMessageExtractor with 1000
// shards and Shardcake's formula with 300, over 2,013 ids including surrogate pairs and the
// MIN_VALUE hash code.
func TestExtractorsMatchJava(t *testing.T) {
	data, err := os.ReadFile("testdata/java_hashcodes.txt")
	if err != nil {
		t.Fatal(err)
	}
	akka, _ := NewHashCodeExtractor(1000)
	cake, _ := NewShardcakeExtractor(300)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) < 2000 {
		t.Fatalf("golden file has %d lines", len(lines))
	}
	for i, line := range lines {
		f := strings.Split(line, " ")
		if len(f) != 4 {
			t.Fatalf("line %d: %q", i+1, line)
		}
		id := EntityID(unescapeJava(t, f[0]))
		if got := strconv.Itoa(int(JavaStringHashCode(string(id)))); got != f[1] {
			t.Errorf("line %d: JavaStringHashCode(%q) = %s, Java says %s", i+1, id, got, f[1])
		}
		if got := akka.ShardID(id); string(got) != f[2] {
			t.Errorf("line %d: HashCodeExtractor(%q) = %s, Akka says %s", i+1, id, got, f[2])
		}
		if got := cake.ShardID(id); string(got) != f[3] {
			t.Errorf("line %d: ShardcakeExtractor(%q) = %s, Shardcake says %s", i+1, id, got, f[3])
		}
	}
}

// unescapeJava turns the golden file's \uXXXX escapes (UTF-16 code units) back into a string.
func unescapeJava(t *testing.T, s string) string {
	var units []uint16
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			v, err := strconv.ParseUint(s[i+2:i+6], 16, 16)
			if err != nil {
				t.Fatalf("bad escape in %q", s)
			}
			units = append(units, uint16(v))
			i += 5
			continue
		}
		units = append(units, uint16(s[i]))
	}
	return string(utf16.Decode(units))
}

func TestHashCodeExtractorMinValue(t *testing.T) {
	// "polygenelubricants".hashCode() == Integer.MIN_VALUE; Math.abs leaves it negative.
	e, _ := NewHashCodeExtractor(1000)
	if got := e.ShardID("polygenelubricants"); got != "-648" {
		t.Fatalf("ShardID = %q, want -648 as in Akka", got)
	}
	if JavaStringHashCode("polygenelubricants") != math.MinInt32 {
		t.Fatal("hash code is not MIN_VALUE")
	}
}

func TestExtractorRejectsBadShardCount(t *testing.T) {
	for _, n := range []int{0, -1, 1<<20 + 1} {
		if _, err := NewHashCodeExtractor(n); err == nil {
			t.Errorf("NewHashCodeExtractor(%d): want error", n)
		}
	}
}

func TestHashCodeExtractorDoesNotAllocate(t *testing.T) {
	e, _ := NewHashCodeExtractor(1000)
	if n := testing.AllocsPerRun(100, func() { _ = e.ShardID("entity-123456") }); n != 0 {
		t.Fatalf("ShardID allocates %v times per call", n)
	}
}

func BenchmarkHashCodeExtractor(b *testing.B) {
	e, _ := NewHashCodeExtractor(1000)
	b.ReportAllocs()
	for b.Loop() {
		_ = e.ShardID("user-1234567890")
	}
}

func TestCheckShard(t *testing.T) {
	hc, _ := NewHashCodeExtractor(10)
	sc, _ := NewShardcakeExtractor(10)
	for _, c := range []struct {
		ex IDChecker
		id ID
		ok bool
	}{
		{hc, "0", true}, {hc, "9", true}, {hc, "10", false}, {hc, "-3", false}, {hc, "-8", true}, // MinInt32 % 10 = -8
		{hc, "abc", false}, {hc, "07", false}, {hc, "", false}, {hc, "+1", false},
		{sc, "1", true}, {sc, "10", true}, {sc, "0", false}, {sc, "11", false},
	} {
		if err := c.ex.CheckShard(c.id); (err == nil) != c.ok {
			t.Errorf("%T %q: %v", c.ex, c.id, err)
		}
	}
	// Every id the extractor produces passes.
	for i := range 2000 {
		id := EntityID("e-" + strconv.Itoa(i))
		if err := hc.CheckShard(hc.ShardID(id)); err != nil {
			t.Fatal(err)
		}
		if err := sc.CheckShard(sc.ShardID(id)); err != nil {
			t.Fatal(err)
		}
	}
}
