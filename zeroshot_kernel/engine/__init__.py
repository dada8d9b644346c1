"""The run engine: the pure reducer that decides what a run does next, and (elsewhere in this
package) the controller that carries those decisions out."""
