"""zeroshot kernel."""
