; oopav repo-map tags for Go.

(function_declaration
  name: (identifier) @name.definition.function)

(method_declaration
  name: (field_identifier) @name.definition.method)

(type_spec
  name: (type_identifier) @name.definition.type)

(source_file
  (const_declaration
    (const_spec name: (identifier) @name.definition.constant)))

(source_file
  (var_declaration
    (var_spec name: (identifier) @name.definition.variable)))

(call_expression
  function: (identifier) @name.reference.call)

(call_expression
  function: (selector_expression
    field: (field_identifier) @name.reference.call))

(composite_literal
  type: (type_identifier) @name.reference.class)

; the type_spec's own name is dropped by the extractor
(type_identifier) @name.reference.type
