"""TF op definitions, one file per op family; each module exports RULES.
The table that joins them is blade_disc_tf.compiler.registry."""
