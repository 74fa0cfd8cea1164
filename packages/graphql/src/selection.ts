import {
  type FieldNode,
  type FragmentSpreadNode,
  GraphQLIncludeDirective,
  type GraphQLResolveInfo,
  GraphQLSkipDirective,
  getDirectiveValues,
  type InlineFragmentNode,
  Kind,
  type SelectionSetNode,
} from 'graphql';

/**
 * The names of the fields the operation selects on a field's result, through fragments and
 * inline fragments of any type condition (more names than one type needs is harmless: it only
 * settles more), leaving out what `@skip` or `@include` leaves out. An alias counts as the
 * field's name, the property a default resolver reads.
 */
export function selectedFieldNames(info: GraphQLResolveInfo): ReadonlySet<string> {
  const names = new Set<string>();
  // A fragment spread in several places is read once.
  const spread = new Set<string>();
  const included = (node: FieldNode | FragmentSpreadNode | InlineFragmentNode) =>
    getDirectiveValues(GraphQLSkipDirective, node, info.variableValues)?.if !== true &&
    getDirectiveValues(GraphQLIncludeDirective, node, info.variableValues)?.if !== false;
  const collect = (selectionSet: SelectionSetNode | undefined): void => {
    for (const selection of selectionSet?.selections ?? []) {
      if (!included(selection)) continue;
      if (selection.kind === Kind.FIELD) names.add(selection.name.value);
      else if (selection.kind === Kind.INLINE_FRAGMENT) collect(selection.selectionSet);
      else if (!spread.has(selection.name.value)) {
        spread.add(selection.name.value);
        collect(info.fragments[selection.name.value]?.selectionSet);
      }
    }
  };
  for (const node of info.fieldNodes) collect(node.selectionSet);
  return names;
}
