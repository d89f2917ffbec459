; oopav repo-map tags for Java.

(class_declaration
  name: (identifier) @name.definition.class)

(record_declaration
  name: (identifier) @name.definition.class)

(interface_declaration
  name: (identifier) @name.definition.interface)

(enum_declaration
  name: (identifier) @name.definition.enum)

(method_declaration
  name: (identifier) @name.definition.method)

(method_invocation
  name: (identifier) @name.reference.call)

(object_creation_expression
  type: (type_identifier) @name.reference.class)

; superclass, interfaces, field/parameter/return types
(type_identifier) @name.reference.type
