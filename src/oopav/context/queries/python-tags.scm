; oopav repo-map tags for Python. Capture names follow the tree-sitter tags convention:
; @name.definition.<kind> and @name.reference.<kind>; only the name node is captured.

(class_definition
  name: (identifier) @name.definition.class)

(function_definition
  name: (identifier) @name.definition.function)

; module-level constants and globals: `TIMEOUT = 3` (grammars differ on whether an
; expression_statement wraps the assignment; match both)
(module
  (assignment
    left: (identifier) @name.definition.constant))

(module
  (expression_statement
    (assignment
      left: (identifier) @name.definition.constant)))

(call
  function: (identifier) @name.reference.call)

(call
  function: (attribute
    attribute: (identifier) @name.reference.call))

(decorator (identifier) @name.reference.call)

(class_definition
  superclasses: (argument_list (identifier) @name.reference.class))

(import_from_statement
  name: (dotted_name (identifier) @name.reference.import))

(import_from_statement
  name: (aliased_import name: (dotted_name (identifier) @name.reference.import)))

(type (identifier) @name.reference.type)
