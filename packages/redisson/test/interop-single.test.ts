import { describeInterop } from './interop/suite.js';
import { singleNode } from './interop/topology.js';

describeInterop('single node, plain pub/sub', singleNode);
