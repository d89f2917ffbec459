; oopav repo-map tags for JavaScript (also used for .mjs, .cjs, .jsx).

(class_declaration
  name: (identifier) @name.definition.class)

(function_declaration
  name: (identifier) @name.definition.function)

(generator_function_declaration
  name: (identifier) @name.definition.function)

(method_definition
  name: (property_identifier) @name.definition.method)

(variable_declarator
  name: (identifier) @name.definition.function
  value: [(arrow_function) (function_expression)])

; top-level constants, exported or not
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

(class_heritage (identifier) @name.reference.class)

(import_specifier
  name: (identifier) @name.reference.import)
