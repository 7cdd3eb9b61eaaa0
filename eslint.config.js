import neostandard from 'neostandard'

export default [
  ...neostandard({
    ts: true,
    ignores: ['dist/**', 'data/**', 'scratch/**'],
  }),
  {
    rules: {
      // TypeBox's idiom: `const Order = Type.Object(…)` and `type Order = Static<typeof Order>`.
      // TypeScript itself reports real redeclarations.
      '@typescript-eslint/no-redeclare': 'off',
    },
  },
]
