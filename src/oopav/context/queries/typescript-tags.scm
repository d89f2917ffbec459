; oopav repo-map tags for TypeScript; the tsx grammar shares these node types.

(class_declaration
  name: (type_identifier) @name.definition.class)

(abstract_class_declaration
  name: (type_identifier) @name.definition.class)

(interface_declaration
  name: (type_identifier) @name.definition.interface)

(type_alias_declaration
  name: (type_identifier) @name.definition.type)

(enum_declaration
  name: (identifier) @name.definition.enum)

(function_declaration
  name: (identifier) @name.definition.function)

(generator_function_declaration
  name: (identifier) @name.definition.function)

(method_definition
  name: (property_identifier) @name.definition.method)

(method_signature
  name: (property_identifier) @name.definition.method)

(variable_declarator
  name: (identifier) @name.definition.function
  value: [(arrow_function) (function_expression)])

(program
  (lexical_declaration
    (variable_declarator name: (identifier) @name.definition.constant)))

(export_statement
  (lexical_declaration
    (variable_declarator name: (identifier) @name.definition.constant)))

(call_expression
  function: (identifier) @name.reference.call)

(call_expression
  function: (member_expression
    property: (property_identifier) @name.reference.call))

(new_expression
  constructor: (identifier) @name.reference.class)

(extends_clause
  value: (identifier) @name.reference.class)

(import_specifier
  name: (identifier) @name.reference.import)

; type annotations, implements clauses, generics; the definition's own name is dropped
; by the extractor (a reference at the same position as a definition)
(type_identifier) @name.reference.type
