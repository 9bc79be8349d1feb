"""Pictures (matplotlib, the optional extra): traces and scaling plots (plots) and mappings
drawn on their network (drawing)."""
