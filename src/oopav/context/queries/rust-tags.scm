; oopav repo-map tags for Rust.

(struct_item
  name: (type_identifier) @name.definition.class)

(enum_item
  name: (type_identifier) @name.definition.enum)

(union_item
  name: (type_identifier) @name.definition.class)

(type_item
  name: (type_identifier) @name.definition.type)

(trait_item
  name: (type_identifier) @name.definition.interface)

(function_item
  name: (identifier) @name.definition.function)

(function_signature_item
  name: (identifier) @name.definition.method)

(mod_item
  name: (identifier) @name.definition.module)

(macro_definition
  name: (identifier) @name.definition.macro)

(const_item
  name: (identifier) @name.definition.constant)

(static_item
  name: (identifier) @name.definition.constant)

(call_expression
  function: (identifier) @name.reference.call)

(call_expression
  function: (field_expression
    field: (field_identifier) @name.reference.call))

(call_expression
  function: (scoped_identifier
    name: (identifier) @name.reference.call))

(macro_invocation
  macro: (identifier) @name.reference.call)

(use_declaration
  argument: (scoped_identifier name: (identifier) @name.reference.import))

; impl targets, field and parameter types; definition names are dropped by the extractor
(type_identifier) @name.reference.type
