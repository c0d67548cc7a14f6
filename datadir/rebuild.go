package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"
)

// MoveStoreAside moves the member's store to DIR/store.damaged-<time> (kept, for a look or
// a backup; delete it once the member runs well) and writes the refill marker with why:
// the member's next process starts with an empty store and refills it from its peers
// before its answers count in reads. It returns where the store went ("" when there was
// none).
func (d *Dir) MoveStoreAside(why string, now time.Time) (string, error) {
	aside := ""
	if _, err := os.Stat(d.Store()); err == nil {
		base := d.File(DamagedPrefix + now.UTC().Format("20060102T150405Z"))
		aside = base
		for i := 2; ; i++ { // two within a second
			if _, err := os.Stat(aside); errors.Is(err, fs.ErrNotExist) {
				break
			}
			aside = base + "-" + strconv.Itoa(i)
		}
		if err := os.Rename(d.Store(), aside); err != nil {
			return "", fmt.Errorf("move the store aside: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := writeFileAtomic(d.File(RefillFile), []byte(why)); err != nil {
		return aside, fmt.Errorf("write %s: %w", d.File(RefillFile), err)
	}
	return aside, nil
}
