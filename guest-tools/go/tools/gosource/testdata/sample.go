// Package shapes is a sample for the outline tests.
package shapes

import (
	"fmt"
	m "math"
)

// Pi is a constant.
const Pi = m.Pi

const (
	small = 1
	// Big is big.
	Big, Bigger int = 2, 3
)

var registry = map[string]Shape{}

// Shape is anything with an area.
type Shape interface {
	Area() float64
	fmt.Stringer
}

// Circle is round.
type Circle struct {
	X, Y float64
	R    float64
}

type Alias = Circle

// Area of the circle.
//
// More text.
func (c *Circle) Area() float64 { return Pi * c.R * c.R }

func (c Circle) String() string {
	return fmt.Sprintf("circle(%g)", c.R)
}

// New makes a circle.
func New[T ~float64](r T) *Circle {
	return &Circle{R: float64(r)}
}

func helper() {}
