// Package roman writes whole numbers as Roman numerals.
package roman

import (
	"fmt"
	"strings"
)

type numeral struct {
	value  int
	symbol string
}

var numerals = []numeral{
	{1000, "M"}, {500, "D"}, {100, "C"}, {50, "L"}, {10, "X"}, {5, "V"}, {1, "I"},
}

// ToRoman returns n (1 to 3999) as a Roman numeral.
func ToRoman(n int) (string, error) {
	if n < 1 || n > 3999 {
		return "", fmt.Errorf("roman: %d is out of range 1-3999", n)
	}
	var out strings.Builder
	for _, num := range numerals {
		for n >= num.value {
			out.WriteString(num.symbol)
			n -= num.value
		}
	}
	return out.String(), nil
}
