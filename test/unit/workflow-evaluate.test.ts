import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import jsonata from 'jsonata';
import type { EvalScope } from '../../src/engine/nodes/types.js';
import {
  EvaluationError,
  checkExpressionSyntax,
  checkTemplateSyntax,
  evaluateCondition,
  evaluateExpression,
  findTemplateProblems,
  isTruthy,
  renderTemplate,
  resolvePorts,
} from '../../src/engine/workflow/evaluate.js';

function scope(over: Partial<EvalScope> = {}): EvalScope {
  return {
    inputs: { prompt: 'hello', steps: 3, tags: ['a', 'b'], obj: { k: 1 } },
    vars: { i: 2 },
    nodes: { draft: { text: 'Draft: hello' }, list: [1, 2] },
    carry: {},
    run: { runId: 'run_1', workflowId: 'wf' },
    ...over,
  };
}

describe('evaluateExpression', () => {
  it('reads paths and compares', async () => {
    assert.equal(await evaluateExpression('inputs.prompt', scope()), 'hello');
    assert.equal(await evaluateExpression('vars.i < inputs.steps', scope()), true);
    assert.equal(await evaluateExpression('nodes.draft.text', scope()), 'Draft: hello');
    assert.equal(await evaluateExpression('run.runId', scope()), 'run_1');
  });

  it('returns undefined for a missing path', async () => {
    assert.equal(await evaluateExpression('inputs.nope.deeper', scope()), undefined);
  });

  it('returns plain arrays, not JSONata sequences', async () => {
    const s = scope({ inputs: { items: [{ n: 1 }, { n: 2 }] } });
    const v = await evaluateExpression('inputs.items.n', s);
    assert.deepEqual(v, [1, 2]);
    assert.equal(Object.hasOwn(v as object, 'sequence'), false);
  });

  it('answers plain property paths exactly as JSONata does', async () => {
    // The fast path (evaluate.ts) reads plain paths without JSONata: the same value, undefined vs
    // null, arrays and objects alike, whether it answers or leaves the expression to JSONata.
    const doc = {
      inputs: {
        prompt: 'hi',
        empty: '',
        n: 3,
        zero: 0,
        neg: -1.5,
        yes: true,
        no: false,
        nil: null,
        arr: [1, 2],
        one: ['x'],
        objs: [{ n: 1 }, { n: 2 }],
        obj: { a: 1, b: { c: 'deep' } },
        and: 'kw',
        constructor: 'own',
        $dollar: 1,
      },
      vars: { i: 2 },
      nodes: { draft: { text: 'Draft' }, list: [1, 2] },
      carry: {},
      run: { runId: 'run_1', workflowId: 'wf' },
    };
    const noProto = Object.assign(Object.create(null), { k: 'v' });
    const odd = { ...doc, inputs: { ...doc.inputs, proto: noProto, date: new Date(0), num: Number.POSITIVE_INFINITY } };
    const exprs = [
      'inputs.prompt',
      '$.inputs.prompt',
      'inputs.empty',
      'inputs.n',
      'inputs.zero',
      'inputs.neg',
      'inputs.yes',
      'inputs.no',
      'inputs.nil',
      'inputs.arr',
      'inputs.one',
      'inputs.objs',
      'inputs.objs.n',
      'inputs.obj',
      'inputs.obj.a',
      'inputs.obj.b.c',
      '$.inputs.obj.b.c',
      'inputs.missing',
      'inputs.missing.deeper',
      'inputs.prompt.length',
      'inputs.nil.x',
      'inputs.arr.x',
      'inputs.constructor',
      'inputs.toString',
      'inputs.__proto__',
      'inputs.proto.k',
      'inputs.date',
      'inputs.num',
      'vars.i',
      'nodes.draft.text',
      'nodes.list',
      'run.runId',
      'inputs',
      '$',
      'inputs.`and`',
      'inputs.$dollar',
      'nosuch',
      'carry.x',
    ];
    for (const d of [doc, odd] as EvalScope[]) {
      for (const expr of exprs) {
        const expected = await jsonata(expr).evaluate(d);
        const got = await evaluateExpression(expr, d);
        assert.equal(got === undefined, expected === undefined, `${expr}: undefined`);
        assert.equal(got === null, expected === null, `${expr}: null`);
        assert.equal(Array.isArray(got), Array.isArray(expected), `${expr}: array`);
        assert.deepEqual(JSON.stringify(got), JSON.stringify(expected), expr);
      }
    }
  });

  it('names the expression on syntax and runtime errors', async () => {
    await assert.rejects(evaluateExpression('inputs.(', scope()), (err: unknown) => {
      assert.ok(err instanceof EvaluationError);
      assert.match(err.message, /inputs\.\(/);
      return true;
    });
    await assert.rejects(evaluateExpression('inputs.prompt + 1', scope()), (err: unknown) => {
      assert.ok(err instanceof EvaluationError);
      assert.match(err.message, /expression "inputs\.prompt \+ 1" failed/);
      return true;
    });
  });

  it('checkExpressionSyntax reports what does not compile', () => {
    assert.equal(checkExpressionSyntax('vars.i + 1'), undefined);
    assert.match(checkExpressionSyntax('vars.i +') ?? '', /end of expression/);
    assert.equal(checkExpressionSyntax('  '), 'empty expression');
  });
});

describe('renderTemplate', () => {
  it('keeps the type of a whole-string expression', async () => {
    const s = scope();
    assert.equal(await renderTemplate('{{ vars.i + 1 }}', s), 3);
    assert.deepEqual(await renderTemplate('{{ inputs.obj }}', s), { k: 1 });
    assert.deepEqual(await renderTemplate('{{ inputs.tags }}', s), ['a', 'b']);
    assert.equal(await renderTemplate('{{ inputs.steps > 1 }}', s), true);
    assert.equal(await renderTemplate('{{ inputs.missing }}', s), null);
  });

  it('interpolates mixed strings', async () => {
    const s = scope();
    assert.equal(await renderTemplate('Say {{ inputs.prompt }} x{{ vars.i }}', s), 'Say hello x2');
    assert.equal(await renderTemplate('[{{ inputs.missing }}]', s), '[]');
    assert.equal(await renderTemplate('o={{ inputs.obj }}', s), 'o={"k":1}');
    assert.equal(await renderTemplate('{{ vars.i }}{{ vars.i }}', s), '22');
  });

  it('walks objects and arrays, leaving non-strings alone', async () => {
    const out = await renderTemplate(
      { a: ['{{ vars.i }}', 5, true, null], b: { c: 'p={{ inputs.prompt }}' }, d: 'plain' },
      scope(),
    );
    assert.deepEqual(out, { a: [2, 5, true, null], b: { c: 'p=hello' }, d: 'plain' });
  });

  it('handles braces and quotes inside a segment', async () => {
    const s = scope();
    assert.deepEqual(await renderTemplate('{{ {"a": {"b": vars.i}} }}', s), { a: { b: 2 } });
    assert.equal(await renderTemplate('x{{ "}}" }}y', s), 'x}}y');
  });

  it('leaves an unterminated {{ as text', async () => {
    assert.equal(await renderTemplate('a {{ b', scope()), 'a {{ b');
  });

  it('renders the approval draft with and without refine feedback', async () => {
    const t =
      'Draft: {{ inputs.prompt }}' +
      "{{ carry.refineFeedback.text ? ' [revised: ' & carry.refineFeedback.text & ']' : '' }}";
    assert.equal(await renderTemplate(t, scope()), 'Draft: hello');
    const refined = scope({ carry: { refineFeedback: { text: 'shorter' } } });
    assert.equal(await renderTemplate(t, refined), 'Draft: hello [revised: shorter]');
  });

  it('propagates evaluation errors', async () => {
    await assert.rejects(renderTemplate({ x: 'n={{ inputs.prompt * 2 }}' }, scope()), EvaluationError);
  });

  it('checkTemplateSyntax and findTemplateProblems point at the bad segment', () => {
    assert.deepEqual(checkTemplateSyntax('ok {{ vars.i }}'), []);
    assert.match(checkTemplateSyntax('bad {{ vars.i + }}')[0] ?? '', /invalid expression "\{\{ vars\.i \+ \}\}"/);
    assert.match(checkTemplateSyntax('x {{ y')[0] ?? '', /unterminated/);
    assert.match(checkTemplateSyntax('{{ }}')[0] ?? '', /empty expression/);
    const problems = findTemplateProblems({ output: { list: ['{{ ( }}'] } }, 'config');
    assert.equal(problems.length, 1);
    assert.match(problems[0] ?? '', /^config\.output\.list\[0\]: invalid expression/);
  });
});

describe('evaluateCondition', () => {
  const s = scope();

  it('no condition is always true', async () => {
    assert.equal(await evaluateCondition(undefined, s), true);
  });

  it('expression uses JSONata-style truthiness', async () => {
    assert.equal(await evaluateCondition({ type: 'expression', expression: 'vars.i < inputs.steps' }, s), true);
    assert.equal(await evaluateCondition({ type: 'expression', expression: 'vars.i > inputs.steps' }, s), false);
    assert.equal(await evaluateCondition({ type: 'expression', expression: 'inputs.missing' }, s), false);
    assert.equal(await evaluateCondition({ type: 'expression', expression: 'inputs.prompt' }, s), true);
  });

  it('equals and notEquals compare deeply and strictly', async () => {
    assert.equal(await evaluateCondition({ type: 'equals', left: 'inputs.steps', right: 3 }, s), true);
    assert.equal(await evaluateCondition({ type: 'equals', left: 'inputs.steps', right: '3' }, s), false);
    assert.equal(await evaluateCondition({ type: 'equals', left: 'inputs.obj', right: { k: 1 } }, s), true);
    assert.equal(await evaluateCondition({ type: 'equals', left: 'inputs.missing', right: null }, s), true);
    // JSONata-built objects have no prototype; they must still equal a JSON literal.
    assert.equal(await evaluateCondition({ type: 'equals', left: '{"k": inputs.obj.k}', right: { k: 1 } }, s), true);
    assert.equal(await evaluateCondition({ type: 'notEquals', left: 'inputs.prompt', right: 'bye' }, s), true);
    assert.equal(await evaluateCondition({ type: 'notEquals', left: 'inputs.prompt', right: 'hello' }, s), false);
  });

  it('contains works on strings, arrays and object keys', async () => {
    assert.equal(await evaluateCondition({ type: 'contains', left: 'inputs.prompt', right: 'ell' }, s), true);
    assert.equal(await evaluateCondition({ type: 'contains', left: 'inputs.prompt', right: 'xyz' }, s), false);
    assert.equal(await evaluateCondition({ type: 'contains', left: 'inputs.tags', right: 'b' }, s), true);
    assert.equal(await evaluateCondition({ type: 'contains', left: 'inputs.tags', right: 'z' }, s), false);
    assert.equal(await evaluateCondition({ type: 'contains', left: 'inputs.obj', right: 'k' }, s), true);
    assert.equal(await evaluateCondition({ type: 'contains', left: 'inputs.missing', right: 'k' }, s), false);
  });

  it('regex matches scalars and refuses bad patterns', async () => {
    assert.equal(await evaluateCondition({ type: 'regex', left: 'inputs.prompt', right: '^h.l+o$' }, s), true);
    assert.equal(await evaluateCondition({ type: 'regex', left: 'inputs.steps', right: '^\\d+$' }, s), true);
    assert.equal(await evaluateCondition({ type: 'regex', left: 'inputs.missing', right: '.*' }, s), false);
    await assert.rejects(evaluateCondition({ type: 'regex', left: 'inputs.prompt', right: '([' }, s), /invalid regex/);
    await assert.rejects(evaluateCondition({ type: 'regex', left: 'inputs.prompt', right: 5 }, s), EvaluationError);
  });

  it('truthy and falsy', async () => {
    assert.equal(await evaluateCondition({ type: 'truthy', left: 'inputs.prompt' }, s), true);
    assert.equal(await evaluateCondition({ type: 'falsy', left: 'inputs.prompt' }, s), false);
    assert.equal(await evaluateCondition({ type: 'falsy', left: 'inputs.missing' }, s), true);
  });

  it('a condition missing its operand is an EvaluationError', async () => {
    await assert.rejects(evaluateCondition({ type: 'equals', right: 1 }, s), EvaluationError);
    await assert.rejects(evaluateCondition({ type: 'expression' }, s), EvaluationError);
  });

  it('isTruthy follows JSONata', () => {
    for (const v of [0, '', null, undefined, [], {}, [false], Number.NaN, false])
      assert.equal(isTruthy(v), false, String(v));
    for (const v of [1, 'x', [0, 1], { a: 1 }, true]) assert.equal(isTruthy(v), true, String(v));
  });
});

describe('resolvePorts', () => {
  it('resolves every port kind', async () => {
    const out = await resolvePorts(
      {
        a: { type: 'static', value: { x: 1 } },
        b: { type: 'expression', expression: 'vars.i * 10' },
        c: { type: 'connection', nodeId: 'draft' },
        d: { type: 'connection', nodeId: 'draft', outputKey: 'text' },
        e: { type: 'variable', variableName: 'i' },
        f: { type: 'connection', nodeId: 'later', optional: true },
        g: { type: 'variable', variableName: 'nope', optional: true },
      },
      scope(),
    );
    assert.deepEqual(out, {
      a: { x: 1 },
      b: 20,
      c: { text: 'Draft: hello' },
      d: 'Draft: hello',
      e: 2,
      f: undefined,
      g: undefined,
    });
  });

  it('refuses missing required connections and variables', async () => {
    await assert.rejects(
      resolvePorts({ x: { type: 'connection', nodeId: 'later' } }, scope()),
      /input "x": node "later" has no output/,
    );
    await assert.rejects(
      resolvePorts({ x: { type: 'connection', nodeId: 'draft', outputKey: 'nope' } }, scope()),
      /output has no key "nope"/,
    );
    await assert.rejects(resolvePorts({ y: { type: 'variable', variableName: 'nope' } }, scope()), (err: unknown) => {
      assert.ok(err instanceof EvaluationError);
      assert.match(err.message, /input "y": variable "nope" is not set/);
      return true;
    });
  });
});
