package postgrescdc

import (
	"strings"
	"testing"
	"time"
)

type order struct {
	ID       int64
	Customer string `db:"customer_name"`
	Amount   float64
	Note     *string
	At       time.Time `db:"created_at"`
	Skip     string    `db:"-"`
}

func TestDecode(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o, err := Decode[order](Row{"id": int32(7), "customer_name": "Ann", "amount": int32(12), "note": "hi", "created_at": at, "skip": "x", "extra": 1})
	if err != nil {
		t.Fatal(err)
	}
	if o.ID != 7 || o.Customer != "Ann" || o.Amount != 12 || o.Note == nil || *o.Note != "hi" || !o.At.Equal(at) || o.Skip != "" {
		t.Errorf("decoded %+v", o)
	}
	o, err = Decode[order](Row{"id": int64(1), "note": nil})
	if err != nil || o.Note != nil {
		t.Errorf("NULL: %+v %v", o, err)
	}
	_, err = Decode[order](Row{"id": "seven"})
	if err == nil || !strings.Contains(err.Error(), `column "id"`) {
		t.Errorf("a string into an int64: %v", err)
	}
}
