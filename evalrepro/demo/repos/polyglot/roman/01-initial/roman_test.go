package roman

import "testing"

func check(t *testing.T, n int, want string) {
	t.Helper()
	got, err := ToRoman(n)
	if err != nil {
		t.Fatalf("ToRoman(%d): %v", n, err)
	}
	if got != want {
		t.Errorf("ToRoman(%d) = %q, want %q", n, got, want)
	}
}

func TestAdditive(t *testing.T) {
	check(t, 1, "I")
	check(t, 3, "III")
	check(t, 8, "VIII")
	check(t, 2023, "MMXXIII")
}

func TestOutOfRange(t *testing.T) {
	for _, n := range []int{0, -1, 4000} {
		if _, err := ToRoman(n); err == nil {
			t.Errorf("ToRoman(%d): no error", n)
		}
	}
}
