export {
  Http2SessionConnector,
  http2Request,
  type Http2Response,
  type Http2SessionConnectorOptions,
} from './http2-session-connector.js';
