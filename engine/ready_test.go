package engine

import (
	"reflect"
	"testing"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/region"
)

// TestReadyListsEveryField: every field of Ready is in lists, so Empty sees it, Drain moves
// it and Reset empties it and drops what it referenced. A field added to the struct and not
// to lists fails here, by name.
func TestReadyListsEveryField(t *testing.T) {
	typ := reflect.TypeFor[Ready]()
	if typ.NumField() != readyFields {
		t.Fatalf("Ready has %d fields, readyFields says %d: list the new field in Ready.lists", typ.NumField(), readyFields)
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type.Kind() != reflect.Slice {
			t.Fatalf("Ready.%s is a %s: Ready's fields are lists (see Ready.lists)", f.Name, f.Type)
		}
		one := func(r *Ready) reflect.Value {
			v := reflect.ValueOf(r).Elem().Field(i)
			item := reflect.New(f.Type.Elem()).Elem()
			fillNonZero(item)
			v.Set(reflect.Append(v, item))
			return v
		}

		var r Ready
		one(&r)
		if r.Empty() {
			t.Errorf("Ready.%s: Empty is true with an item in it", f.Name)
		}

		e := &Engine{}
		one(&e.out)
		var dst Ready // the runtime's reused Ready: emptied, with its buffers
		one(&dst)
		dst.Reset()
		e.Drain(&dst)
		if got := reflect.ValueOf(dst).Field(i).Len(); got != 1 {
			t.Errorf("Ready.%s: Drain moved %d items, want 1", f.Name, got)
		}
		if !e.out.Empty() {
			t.Errorf("Ready.%s: Drain left the engine's item behind", f.Name)
		}
		if kept := reflect.ValueOf(e.out).Field(i); kept.Cap() == 0 || !kept.Slice(0, 1).Index(0).IsZero() {
			t.Errorf("Ready.%s: Drain left the engine without an empty buffer", f.Name)
		}

		v := reflect.ValueOf(&dst).Elem().Field(i)
		dst.Reset()
		if v.Len() != 0 {
			t.Errorf("Ready.%s: Reset left %d items", f.Name, v.Len())
		}
		if v.Cap() == 0 || !v.Slice(0, 1).Index(0).IsZero() {
			t.Errorf("Ready.%s: Reset did not keep the buffer or kept a reference to what it held", f.Name)
		}
	}
}

// fillNonZero sets v (addressable) to something other than its zero value.
func fillNonZero(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				fillNonZero(v.Field(i))
				return
			}
		}
	case reflect.Interface:
		for _, x := range []any{membership.LeaderChanged{Leader: "x"}, struct{ x int }{1}} {
			if reflect.TypeOf(x).AssignableTo(v.Type()) {
				v.Set(reflect.ValueOf(x))
				return
			}
		}
		panic("fillNonZero: add a value of " + v.Type().String())
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	default:
		panic("fillNonZero: " + v.Kind().String())
	}
}

// BenchmarkDrain is the runtime loop's turn over the engine's output: Reset, Drain, Empty.
// Baseline: the same turn written field by field, as it was before the field list.
func BenchmarkDrain(b *testing.B) {
	fill := func(r *Ready) {
		r.Membership = append(r.Membership, membership.Envelope{To: "a"})
		r.Coordination = append(r.Coordination, Coordination{To: "a", Type: "t", Msg: coordinator.Register{}})
		r.Forwards = append(r.Forwards, Forward{To: "a", Type: "t", Envelope: region.Envelope{Entity: "e"}})
		r.Entities = append(r.Entities, EntityOp{Kind: OpDeliver, Type: "t", Entity: "e"})
	}
	b.Run("lists", func(b *testing.B) {
		e := &Engine{}
		var dst Ready
		b.ReportAllocs()
		for b.Loop() {
			fill(&e.out)
			dst.Reset()
			e.Drain(&dst)
			if dst.Empty() {
				b.Fatal("empty")
			}
		}
	})
	b.Run("baseline-by-hand", func(b *testing.B) {
		var src, dst Ready
		b.ReportAllocs()
		for b.Loop() {
			fill(&src)
			resetByHand(&dst)
			dst.Membership = append(dst.Membership, src.Membership...)
			dst.Coordination = append(dst.Coordination, src.Coordination...)
			dst.Forwards = append(dst.Forwards, src.Forwards...)
			dst.Entities = append(dst.Entities, src.Entities...)
			dst.Rejected = append(dst.Rejected, src.Rejected...)
			dst.Members = append(dst.Members, src.Members...)
			dst.Events = append(dst.Events, src.Events...)
			dst.Store = append(dst.Store, src.Store...)
			dst.Leases = append(dst.Leases, src.Leases...)
			dst.ResolverLease = append(dst.ResolverLease, src.ResolverLease...)
			resetByHand(&src)
			if len(dst.Membership) == 0 && len(dst.Coordination) == 0 && len(dst.Forwards) == 0 && len(dst.Entities) == 0 &&
				len(dst.Rejected) == 0 && len(dst.Members) == 0 && len(dst.Events) == 0 && len(dst.Store) == 0 && len(dst.Leases) == 0 {
				b.Fatal("empty")
			}
		}
	})
}

func resetByHand(r *Ready) {
	clear(r.Membership)
	clear(r.Coordination)
	clear(r.Forwards)
	clear(r.Entities)
	clear(r.Rejected)
	clear(r.Members)
	clear(r.Events)
	clear(r.Store)
	clear(r.Leases)
	clear(r.ResolverLease)
	*r = Ready{
		Membership: r.Membership[:0], Coordination: r.Coordination[:0], Forwards: r.Forwards[:0], Entities: r.Entities[:0],
		Rejected: r.Rejected[:0], Members: r.Members[:0], Events: r.Events[:0], Store: r.Store[:0], Leases: r.Leases[:0],
		ResolverLease: r.ResolverLease[:0],
	}
}
