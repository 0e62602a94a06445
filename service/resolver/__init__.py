"""The resolver: references matched against the catalogue of works, as resolutions with evidence."""
